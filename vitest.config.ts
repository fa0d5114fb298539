import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const src = (pkg: string, file = "index.ts") => fileURLToPath(new URL(`./packages/${pkg}/src/${file}`, import.meta.url))

export default defineConfig({
  resolve: {
    // Tests run against the TypeScript sources, so a test run never depends on a stale build.
    alias: [
      { find: /^@lm\/domain\/verify$/, replacement: src("domain", "verify/index.ts") },
      { find: /^@lm\/domain$/, replacement: src("domain") },
      { find: /^@lm\/storage-memory$/, replacement: src("storage-memory") },
      { find: /^@lm\/storage-pg$/, replacement: src("storage-pg") },
      { find: /^@lm\/http$/, replacement: src("http") }
    ]
  },
  test: {
    include: ["test/**/*.test.ts", "packages/*/test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000
  }
})
