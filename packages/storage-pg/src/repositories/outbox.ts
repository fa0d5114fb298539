/**
 * The domain's `EventOutbox` on `lm_events`, and the revocation sequence in `lm_counters`, advanced in the same
 * statement as the events that change what the CRL lists.
 */
import { Effect, Layer, Schema } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import type { Statement } from "effect/sql"
import { Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { firstOf, Int8, iso, rowsOf, tableOf } from "./rows.js"

/** A row of `lm_events` (its type read as one of the contract's event names). */
const events = tableOf(Model.StoredEvent, { generated: ["id"], read: { type: Model.EventType } })
export const EventRow = events.Row

export const eventRows = rowsOf(EventRow, "lm_events")
const firstEvent = firstOf(EventRow, "lm_events")
const counter = firstOf(Schema.Struct({ value: Int8 }), "lm_counters")

/** An event to append; `insertedMachine` names a machine the same statement inserts, whose id it is about. */
export interface EventToAppend {
  readonly event: Model.DomainEvent
  readonly insertedMachine?: { readonly licenseId: number; readonly fingerprint: string } | undefined
}

/**
 * The one way events are written: the parts of a `WITH` (`ev`, `seq`) that append `toAppend` to `lm_events` in
 * order, and advance the revocation sequence when one of them changes what the CRL lists
 * (`Model.affectsRevocationList`), in the same statement. `append` runs them alone; a batch of seat changes
 * (`MachineRepository.writeSeatChanges`) runs them with the machines it writes, naming the part that inserts
 * machines (`insertedMachines`, returning their rows): an event with an `insertedMachine` gets that machine's id
 * (license and fingerprint are unique).
 */
export const appendEvents = (
  sql: PgClient,
  toAppend: ReadonlyArray<EventToAppend>,
  insertedMachines?: string
): Statement.Fragment => {
  const records = toAppend.map(({ event, insertedMachine }, ord) => ({
    ord,
    ...events.columns(event, iso),
    machine_id: insertedMachine === undefined ? event.machineId : null,
    insert_license_id: insertedMachine?.licenseId ?? null,
    insert_fingerprint: insertedMachine?.fingerprint ?? null
  }))
  const affects = Model.affectsRevocationList(toAppend.map((e) => e.event))
  return sql`ev AS (
      INSERT INTO lm_events (type, occurred_at, license_id, machine_id, data)
      SELECT e.type, e.occurred_at, e.license_id, ${insertedMachines === undefined ? sql`e.machine_id` : sql`COALESCE(i.id, e.machine_id)`}, e.data
      FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb) AS e(ord int, type text, occurred_at timestamptz, license_id bigint,
        machine_id bigint, data jsonb, insert_license_id bigint, insert_fingerprint text)
      ${
    insertedMachines === undefined
      ? sql``
      : sql`LEFT JOIN ${sql(insertedMachines)} i ON i.license_id = e.insert_license_id AND i.fingerprint = e.insert_fingerprint`
  }
      ORDER BY e.ord
      RETURNING id
    ), seq AS (
      UPDATE lm_counters SET value = value + 1
      WHERE name = 'revocation_seq' AND ${affects}::boolean
      RETURNING value
    )`
}

export const layer = Layer.effect(
  Ports.EventOutbox,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls
    return Ports.EventOutbox.of({
      append: (events) =>
        events.length === 0
          ? Effect.void
          : sql`WITH ${appendEvents(sql, events.map((event) => ({ event })))} SELECT 1`.pipe(Effect.asVoid, orUnavailable),
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
