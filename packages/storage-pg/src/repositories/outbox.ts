/**
 * The domain's `EventOutbox` on `lm_events`, and the revocation sequence in `lm_counters`, advanced in the same
 * statement group as the events that change what the CRL lists.
 */
import { Effect, Layer, Schema, Struct } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Model, Ports } from "@lm/domain"
import { orUnavailable } from "./failures.js"
import { date, firstOf, Int8, rowsOf, Timestamp } from "./rows.js"

/** The column of each field of an event whose name differs (snake_case), for reading and writing rows. */
const eventColumnNames = { occurredAt: "occurred_at", licenseId: "license_id", machineId: "machine_id" } as const

/** A row of `lm_events`. */
export const EventRow = Schema.Struct({
  id: Int8,
  type: Model.EventType,
  occurredAt: Timestamp,
  licenseId: Schema.NullOr(Int8),
  machineId: Schema.NullOr(Int8),
  data: Schema.Record(Schema.String, Schema.Unknown)
}).pipe(Schema.encodeKeys(eventColumnNames))

export const eventRows = rowsOf(EventRow, "lm_events")
const firstEvent = firstOf(EventRow, "lm_events")
const counter = firstOf(Schema.Struct({ value: Int8 }), "lm_counters")

export const layer = Layer.effect(
  Ports.EventOutbox,
  Effect.gen(function*() {
    const sql = yield* PgClient
    return Ports.EventOutbox.of({
      append: (events) => {
        const [first, ...rest] = events.map((e) =>
          Struct.renameKeys({
            type: e.type,
            occurredAt: date(e.occurredAt),
            licenseId: e.licenseId,
            machineId: e.machineId,
            data: sql.json(e.data)
          }, eventColumnNames)
        )
        return first === undefined
          ? Effect.void
          : Effect.gen(function*() {
            yield* sql`INSERT INTO lm_events ${sql.insert([first, ...rest])}`
            if (Model.affectsRevocationList(events)) yield* sql`UPDATE lm_counters SET value = value + 1 WHERE name = 'revocation_seq'`
          }).pipe(orUnavailable)
      },
      readAfter: (afterId, limit) =>
        sql`SELECT * FROM lm_events WHERE id > ${afterId} ORDER BY id LIMIT ${limit}`.pipe(Effect.flatMap(eventRows), orUnavailable),
      findById: (id) => sql`SELECT * FROM lm_events WHERE id = ${id}`.pipe(Effect.flatMap(firstEvent), orUnavailable),
      findByIds: (ids) =>
        ids.length === 0
          ? Effect.succeed([])
          : sql`SELECT * FROM lm_events WHERE id IN ${sql.in(ids)}`.pipe(Effect.flatMap(eventRows), orUnavailable),
      revocationSeq: sql`SELECT value FROM lm_counters WHERE name = 'revocation_seq'`.pipe(
        Effect.flatMap(counter),
        Effect.map((row) => row?.value ?? 0),
        orUnavailable
      )
    })
  })
)
