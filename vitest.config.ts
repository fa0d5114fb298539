import { availableParallelism } from "node:os"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const src = (pkg: string, file = "index.ts") => fileURLToPath(new URL(`./${pkg.includes("/") ? pkg : `packages/${pkg}`}/src/${file}`, import.meta.url))

/** Every test file of the repository. */
const allFiles = ["test/**/*.test.ts", "packages/*/test/**/*.test.ts", "apps/*/test/**/*.test.ts"]

/** Pure tests: no server, no database server, no child process. They run first, on every core. */
const unitFiles = [
  "packages/domain/test/**/*.test.ts",
  "packages/storage-memory/test/**/*.test.ts",
  "test/model/**/*.test.ts",
  "test/architecture/**/*.test.ts",
  "test/storage-contract/memory.test.ts",
  "test/support/**/*.test.ts"
]

/**
 * Tests that start several processes, a proxy between them, or a browser. They run after `server`, two files at a
 * time: each file has its own ports (port 0), data folders and databases.
 */
const multiProcessFiles = [
  "test/http/**/*.test.ts",
  "test/cli/**/*.test.ts",
  "test/console/**/*.test.ts",
  "test/packaging/**/*.test.ts",
  "test/client/browser.test.ts",
  "test/client/example.test.ts",
  "test/examples.test.ts"
]

/**
 * The multi-process files that time something (an answer within a bound while a link is cut or the store is down,
 * a change seen by another server within 1 s, a burst against a rate, a drain's exit): they run last, one at a
 * time, so that no other file's processes compete with them. (The fuzz is not one: it sends a fixed number of
 * requests to a server in its own process, one core's work, with a 10 s hang bound.)
 */
const aloneFiles = [
  "test/http/partition.test.ts",
  "test/http/store-down.test.ts",
  "test/http/store-refuses.test.ts",
  "test/http/drain.test.ts",
  "test/http/two-servers.test.ts",
  "test/http/subscriptions-two-servers.test.ts",
  "test/http/rate-limits-shared.test.ts"
]

/** Workers per project: vitest's default leaves one core to its main process, which on 2 cores means one worker. */
const cores = Math.max(2, availableParallelism())

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
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Three projects, run one after the other (docs/testing.md says where a new test file goes). A file falls into
    // a project by its folder, so a new file needs no registration; `server` takes whatever the others do not.
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: unitFiles,
          sequence: { groupOrder: 0 },
          maxWorkers: cores
        }
      },
      {
        extends: true,
        test: {
          name: "server",
          include: allFiles,
          exclude: [...unitFiles, ...multiProcessFiles],
          sequence: { groupOrder: 1 },
          maxWorkers: cores,
          // A worker runs its files one after another in one process, so they share what `sharedApp` started
          // (one server per store per worker instead of one per file) and the modules already loaded.
          isolate: false
        }
      },
      {
        extends: true,
        test: {
          name: "multi-process",
          include: multiProcessFiles,
          exclude: aloneFiles,
          sequence: { groupOrder: 2 },
          // Much of a file's time is its child processes starting and answering: two files at a time keep both cores busy.
          maxWorkers: cores
        }
      },
      {
        extends: true,
        test: {
          name: "alone",
          include: aloneFiles,
          sequence: { groupOrder: 3 },
          maxWorkers: 1
        }
      }
    ]
  }
})
