/**
 * Rows are decoded by schemas. `int8` columns come from the driver as `bigint`: a value the domain's numbers
 * hold exactly (up to 2^53 - 1) is read exactly, a larger one is refused (a defect naming the table), never
 * rounded to a neighbouring id.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Ports } from "@lm/domain"
import { layerOnClient, PgliteTemplate } from "@lm/storage-pg"
import { Cause, Effect, Exit, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { Int8, Int8Text, RowDecodeError } from "../src/repositories/rows.js"

const MAX = Number.MAX_SAFE_INTEGER // 2^53 - 1
const ABOVE = 9007199254740993n // 2^53 + 1: as a number it would become 2^53

describe("int8 columns", () => {
  it("decode exactly up to 2^53 - 1 and refuse anything beyond", () => {
    assert.strictEqual(Schema.decodeUnknownSync(Int8)(BigInt(MAX)), MAX)
    assert.strictEqual(Schema.decodeUnknownSync(Int8)(BigInt(-MAX)), -MAX)
    assert.strictEqual(Schema.decodeUnknownSync(Int8Text)(String(MAX)), MAX)
    assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(Int8)(ABOVE)))
    assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(Int8)(-ABOVE)))
    assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(Int8Text)(String(ABOVE))))
    // Only what the driver returns for int8 (bigint), or its decimal text: not a number already rounded.
    assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(Int8)(1)))
    assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(Int8Text)("1.5")))
  })
})

/** The defect of a failed store call, if it is a row that did not decode. */
const decodeFailure = <A, E>(exit: Exit.Exit<A, E>): RowDecodeError | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const defect = Cause.squash(exit.cause)
  return defect instanceof RowDecodeError ? defect : undefined
}

layer(layerOnClient.pipe(Layer.provideMerge(PgliteTemplate.layerTemporaryMigrated)), { excludeTestServices: true, timeout: "120 seconds" })(
  "stored ids beyond 2^53",
  (it) => {
    it.effect("a license id of 2^53 - 1 is read exactly; 2^53 + 1 is refused, not rounded", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const licenses = yield* Ports.LicenseRepository
        const insert = (id: bigint, key: string) =>
          sql`INSERT INTO lm_licenses (id, key, state, overage_strategy, is_floating, lease_duration, require_heartbeat,
                heartbeat_interval, grace_days, source, created_at, updated_at)
              VALUES (${id}, ${key}, 'issued', 'deny', false, 0, false, 0, 0, 'api', now(), now())`
        yield* insert(BigInt(MAX), "EXACT")
        yield* insert(ABOVE, "TOO-BIG")

        assert.strictEqual((yield* licenses.findByKey("EXACT"))?.id, MAX)
        const refused = decodeFailure(yield* Effect.exit(licenses.findByKey("TOO-BIG")))
        assert.isDefined(refused)
        assert.include(refused!.message, "lm_licenses")
        // A count is an int8 too, and a list decodes every row: the whole call is refused.
        assert.isDefined(decodeFailure(yield* Effect.exit(licenses.list({ page: 1, perPage: 10, orderBy: "id", order: "asc" }))))
      }))

    it.effect("a component id beyond 2^53 (read through JSON, as text) is refused too", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const machines = yield* Ports.MachineRepository
        const [license] = yield* sql<{ readonly id: bigint }>`
          INSERT INTO lm_licenses (key, state, overage_strategy, is_floating, lease_duration, require_heartbeat,
            heartbeat_interval, grace_days, source, created_at, updated_at)
          VALUES ('WITH-MACHINE', 'issued', 'deny', false, 0, false, 0, 0, 'api', now(), now()) RETURNING id`
        const [machine] = yield* sql<{ readonly id: bigint }>`
          INSERT INTO lm_machines (license_id, fingerprint, status, activated_at, created_at)
          VALUES (${license!.id}, 'fp', 'active', now(), now()) RETURNING id`
        yield* sql`INSERT INTO lm_machine_components (id, machine_id, kind, fingerprint) VALUES (${ABOVE}, ${machine!.id}, 'cpu', 'c')`
        const refused = decodeFailure(yield* Effect.exit(machines.findById(Number(machine!.id))))
        assert.isDefined(refused)
        assert.include(refused!.message, "lm_machines")
      }))
  }
)
