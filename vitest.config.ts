import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const src = (pkg: string, file = "index.ts") => fileURLToPath(new URL(`./${pkg.includes("/") ? pkg : `packages/${pkg}`}/src/${file}`, import.meta.url))

export default defineConfig({
  resolve: {
    // Tests run against the TypeScript sources, so a test run never depends on a stale build.
    alias: [
      { find: /^@lm\/domain\/verify$/, replacement: src("domain", "verify/index.ts") },
      { find: /^@lm\/domain\/core$/, replacement: src("domain", "core.ts") },
      { find: /^@lm\/domain$/, replacement: src("domain") },
      { find: /^@lm\/storage-memory$/, replacement: src("storage-memory") },
      { find: /^@lm\/storage-pg$/, replacement: src("storage-pg") },
      { find: /^@lm\/api\/wire$/, replacement: src("api", "wire/Wire.ts") },
      { find: /^@lm\/api$/, replacement: src("api") },
      { find: /^@lm\/http$/, replacement: src("http") },
      { find: /^@lm\/client\/node$/, replacement: src("client", "node/index.ts") },
      { find: /^@lm\/client$/, replacement: src("client") },
      { find: /^@lm\/server$/, replacement: src("apps/server") }
    ]
  },
  test: {
    include: ["test/**/*.test.ts", "packages/*/test/**/*.test.ts", "apps/*/test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000
  }
})
