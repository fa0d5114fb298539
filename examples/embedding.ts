import { Effect, Result } from "effect"
import { Engine, Licenses, Licensing, Secrets } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { layerPgliteStore } from "@lm/storage-pg" // or layerPostgresStore({ url }) for a PostgreSQL server

// Run from the project folder after `npm run build` (`npx node` is the project's Node.js, which runs TypeScript):
// `npx node examples/embedding.ts` runs on the memory store, which keeps nothing.
// `LM_MASTER_KEY=... npx node examples/embedding.ts ./licensing-data` keeps the store in that folder (embedded
// PGlite), sealed with the master key in LM_MASTER_KEY (base64 of 32 bytes, e.g. `openssl rand -base64 32`): give
// the same key at every start.
const dataDir = process.argv[2]
const engine = dataDir === undefined
  ? Engine.layer(MemoryStore.layer, { sweepIntervalSeconds: 0 })
  : Engine.layer(layerPgliteStore({ dataDir }), {
    masterKey: Result.getOrThrow(Secrets.parseMasterKey(process.env.LM_MASTER_KEY ?? "")),
    sweepIntervalSeconds: 0
  })

const program = Effect.gen(function*() {
  const { license } = yield* (yield* Licenses).create({ maxActivations: 3 })
  yield* (yield* Licensing).activate({ licenseKey: license.key, facts: { fingerprint: "host-1" }, ipAddress: null })
  const { validation } = yield* (yield* Licensing).validate({ licenseKey: license.key, fingerprint: "host-1", ipAddress: null })
  return validation.code // "valid"
})

Effect.runPromise(program.pipe(Effect.provide(engine), Effect.scoped)).then(console.log)
