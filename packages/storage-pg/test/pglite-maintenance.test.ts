/**
 * Embedded PGlite has no autovacuum and no checkpointer (PostgreSQL in single-user mode): without
 * `maintainPglite` a data folder grows with every write, the event log's retention deleting rows or not (dead
 * rows are never reused, WAL segments never recycled). With it, a log kept at a fixed size keeps the folder
 * flat; `layerPgliteStore` runs it in the background (`layerPgliteMaintenance`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { type Model, Ports } from "@lm/domain"
import { layerOnClient, layerPglite, layerPgliteMaintenance, maintainPglite, PgliteTemplate } from "@lm/storage-pg"
import * as fs from "node:fs"
import * as path from "node:path"

const folderBytes = (dir: string): number => {
  let total = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += fs.statSync(path.join(entry.parentPath, entry.name)).size
  }
  return total
}

const entry = (at: number): Model.ActivityEntry => ({
  kind: "validate",
  licenseId: 1,
  licenseKey: "AAAA-BBBB-CCCC-DDDD",
  machineId: null,
  fingerprint: null,
  ipAddress: "127.0.0.1",
  appVersion: null,
  result: "valid",
  at
})

describe("PGlite maintenance", () => {
  it.live("keeps a data folder flat while the event log is written and pruned to a fixed size", () =>
    Effect.gen(function*() {
      const dataDir = yield* PgliteTemplate.temporaryDataDir
      const sizes = yield* Effect.gen(function*() {
        const log = yield* Ports.ActivityLog
        const sizes: Array<number> = []
        let at = 0
        for (let round = 0; round < 7; round++) {
          for (let i = 0; i < 4; i++) yield* log.record(Array.from({ length: 5_000 }, () => entry(at++)))
          // Keep the newest 20,000 entries, as retention would.
          for (let n = -1; n !== 0;) n = yield* log.prune(at - 20_000, 1_000)
          yield* maintainPglite
          sizes.push(folderBytes(dataDir))
        }
        return sizes
      }).pipe(Effect.provide(layerOnClient.pipe(Layer.provideMerge(layerPglite({ dataDir, thread: "main" })))))
      // Rounds 0-1 fill the table and the WAL; from then on the folder reuses what it has (140,000 rows were
      // written in all; without maintenance it grew from 42 to 110 MiB, ~11 MiB a round).
      expect(sizes[6]!, sizes.map((s) => (s / 2 ** 20).toFixed(1)).join(", ")).toBeLessThanOrEqual(sizes[2]! * 1.1)
    }).pipe(Effect.scoped), 120_000)

  it.live("runs in the background every interval", () =>
    Effect.gen(function*() {
      const dataDir = yield* PgliteTemplate.temporaryDataDir
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient
        const checkpoint = Effect.map(
          sql<{ readonly lsn: string }>`SELECT checkpoint_lsn::text AS lsn FROM pg_control_checkpoint()`,
          (rows) => rows[0]!.lsn
        )
        const before = yield* checkpoint
        yield* sql`CREATE TABLE written (v text)`
        yield* sql`INSERT INTO written SELECT 'x' FROM generate_series(1, 1000)`
        // A new checkpoint (only the background job makes one here), polled until it shows.
        const after = yield* checkpoint.pipe(
          Effect.repeat({ until: (lsn) => lsn !== before, schedule: Schedule.spaced("50 millis") }),
          Effect.timeout("10 seconds")
        )
        expect(after).not.toBe(before)
      }).pipe(Effect.provide(layerPgliteMaintenance("100 millis").pipe(Layer.provideMerge(layerPglite({ dataDir, thread: "main" })))))
    }).pipe(Effect.scoped), 60_000)
})
