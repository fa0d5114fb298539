import { Effect } from "effect"
import { Engine, Licenses, Licensing } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory" // or layerPgliteStore / layerPostgresStore from @lm/storage-pg

const engine = Engine.layer(MemoryStore.layer, { sweepIntervalSeconds: 0 })

const program = Effect.gen(function*() {
  const { license } = yield* (yield* Licenses).create({ maxActivations: 3 })
  yield* (yield* Licensing).activate({ licenseKey: license.key, facts: { fingerprint: "host-1" }, ipAddress: null })
  const { validation } = yield* (yield* Licensing).validate({ licenseKey: license.key, fingerprint: "host-1", ipAddress: null })
  return validation.code // "valid"
})

Effect.runPromise(program.pipe(Effect.provide(engine), Effect.scoped)).then(console.log)
