// Lets Node run the bundled server from its TypeScript sources in a child process (tests never depend on a
// stale build): `@lm/*` resolves to `packages/*/src`, and a relative import of `x.js` that does not exist
// resolves to `x.ts`, as tsc and vitest do. Use with `--experimental-transform-types`.
import { registerHooks } from "node:module"

const packages = new URL("../../../packages/", import.meta.url)
const sources = {
  "@lm/domain": "domain/src/index.ts",
  "@lm/domain/verify": "domain/src/verify/index.ts",
  "@lm/domain/core": "domain/src/core.ts",
  "@lm/storage-memory": "storage-memory/src/index.ts",
  "@lm/storage-pg": "storage-pg/src/index.ts",
  "@lm/http": "http/src/index.ts",
  "@lm/http/api": "http/src/api/index.ts",
  "@lm/client": "client/src/index.ts",
  "@lm/client/node": "client/src/node/index.ts"
}

registerHooks({
  resolve(specifier, context, nextResolve) {
    const source = sources[specifier]
    if (source !== undefined) return nextResolve(new URL(source, packages).href, context)
    try {
      return nextResolve(specifier, context)
    } catch (error) {
      if (error?.code === "ERR_MODULE_NOT_FOUND" && specifier.startsWith(".") && specifier.endsWith(".js")) {
        return nextResolve(specifier.slice(0, -3) + ".ts", context)
      }
      throw error
    }
  }
})
