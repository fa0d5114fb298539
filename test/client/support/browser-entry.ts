// The SDK as a browser page sees it: the main entry of @lm/client, bundled by the browser test.
import * as lm from "@lm/client"

Object.assign(globalThis, { lm })
