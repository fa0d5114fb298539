// Lets Node (with its built-in type stripping) run the TypeScript sources directly in a child process:
// a relative import of `x.js` that does not exist resolves to `x.ts`, as `tsc` and vitest do.
import { registerHooks } from "node:module"

registerHooks({
  resolve(specifier, context, nextResolve) {
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
