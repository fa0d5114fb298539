// Lets Node run the bundled server from its TypeScript sources in a child process (tests never depend on a
// stale build): `@lm/*` resolves to `packages/*/src` (`@lm/server` to `apps/server/src`), and a relative import of `x.js` that does not exist
// resolves to `x.ts`, as tsc and vitest do. Use with `--experimental-transform-types`.
import { registerHooks } from "node:module"

const root = new URL("../../../", import.meta.url)
const sources = {
  "@lm/domain": "packages/domain/src/index.ts",
  "@lm/domain/verify": "packages/domain/src/verify/index.ts",
  "@lm/domain/core": "packages/domain/src/core.ts",
  "@lm/storage-memory": "packages/storage-memory/src/index.ts",
  "@lm/storage-pg": "packages/storage-pg/src/index.ts",
  "@lm/api": "packages/api/src/index.ts",
  "@lm/api/wire": "packages/api/src/wire/Wire.ts",
  "@lm/http": "packages/http/src/index.ts",
  "@lm/client": "packages/client/src/index.ts",
  "@lm/client/node": "packages/client/src/node/index.ts",
  "@lm/server": "apps/server/src/index.ts"
}

registerHooks({
  resolve(specifier, context, nextResolve) {
    const source = sources[specifier]
    if (source !== undefined) return nextResolve(new URL(source, root).href, context)
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
