/**
 * `LM_PGLITE_THREAD` (README settings): the served PGlite store runs on a worker thread unless `main` is asked
 * for, and a value that is neither is refused at start-up rather than ignored. Both ways serve the same store.
 */
import { ConfigProvider, Effect, Redacted } from "effect"
import { Engine, Licenses, Licensing } from "@lm/domain"
import { PgliteTemplate } from "@lm/storage-pg"
import { describe, expect, it } from "vitest"
import { storeChoiceFromEnv, storeLayer } from "../src/Store.js"

const choose = (env: Record<string, string>) =>
  Effect.runSync(storeChoiceFromEnv.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))))

describe("LM_PGLITE_THREAD", () => {
  it("is read from the environment: worker by default, main when asked, anything else refused", () => {
    expect(choose({ LM_DATA_DIR: "/tmp/x" })).toEqual({ _tag: "pglite", dataDir: "/tmp/x", thread: "worker" })
    expect(choose({ LM_DATA_DIR: "/tmp/x", LM_PGLITE_THREAD: "main" })).toMatchObject({ thread: "main" })
    expect(choose({ LM_DATA_DIR: "/tmp/x", LM_PGLITE_THREAD: "worker" })).toMatchObject({ thread: "worker" })
    const refused = Effect.runSync(Effect.flip(storeChoiceFromEnv).pipe(
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { LM_PGLITE_THREAD: "both" } })))
    ))
    expect(String(refused)).toMatch(/LM_PGLITE_THREAD/)
  })

  it.each(["worker", "main"] as const)("serves the store with PGlite on the %s thread, data kept across a restart", async (thread) => {
    const program = Effect.gen(function*() {
      const dataDir = yield* PgliteTemplate.temporaryDataDir
      // The same master key both times, as `lm serve` reads it from the data folder.
      const masterKey = Redacted.make(new Uint8Array(32).fill(5))
      const served = (use: Effect.Effect<string, unknown, Licenses | Licensing>) =>
        use.pipe(
          Effect.provide(Engine.layer(storeLayer({ _tag: "pglite", dataDir, thread }), { sweepIntervalSeconds: 0, masterKey })),
          Effect.scoped
        )
      const key = yield* served(Effect.gen(function*() {
        const { license } = yield* (yield* Licenses).create({ maxActivations: 1 })
        yield* (yield* Licensing).activate({ licenseKey: license.key, facts: { fingerprint: "host-1" }, ipAddress: null })
        return license.key
      }))
      return yield* served(Effect.gen(function*() {
        const refused = yield* (yield* Licensing).activate({ licenseKey: key, facts: { fingerprint: "host-2" }, ipAddress: null }).pipe(
          Effect.flip
        )
        return refused.code
      }))
    })
    expect(await Effect.runPromise(Effect.scoped(program))).toBe("machine_limit_exceeded")
  })
})
