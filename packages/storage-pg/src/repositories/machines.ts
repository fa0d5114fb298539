/**
 * The domain's `MachineRepository` on `lm_machines` and `lm_machine_components`. A batch of seat changes is
 * written in one statement (machines inserted and updated, their events appended to `lm_events`); the sweep
 * claims expired machines with `FOR UPDATE SKIP LOCKED`, so several processes can sweep at once.
 */
import { Effect, Layer, Schema } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { appendEvents } from "./outbox.js"
import { Count, date, firstOf, Id, Int8, Int8Text, iso, oneOf, rowsOf, tableOf } from "./rows.js"

/** A component as `machineSelect` aggregates it into JSON (its id as text, so that it is not rounded). */
const ComponentRow = tableOf(Model.Component, { computed: { id: Int8Text } }).Row

/** `lm_machines`; a row has its components (the `components` column `machineSelect` adds). */
const machines = tableOf(Model.Machine, { generated: ["id"], computed: { components: Schema.Array(ComponentRow) } })
const MachineRow = machines.Row

const machineRows = rowsOf(MachineRow, "lm_machines")
const firstMachine = firstOf(MachineRow, "lm_machines")
const oneMachine = oneOf(MachineRow, "lm_machines")
const oneId = oneOf(Id, "lm_machines")
const count = oneOf(Count, "a count")
const revokedRows = rowsOf(Schema.Struct({ id: Int8, fingerprint: Schema.String }), "lm_machines")

/** The columns of a machine row but its id, and their types (for `jsonb_to_recordset`). */
const machineFieldTypes = "license_id bigint, fingerprint text, name text, hostname text, platform text, app_version text, " +
  "ip_address text, status text, activated_at timestamptz, deactivated_at timestamptz, deactivation_reason text, " +
  "last_heartbeat_at timestamptz, lease_expires_at timestamptz, seat_deadline timestamptz, meta jsonb, created_at timestamptz"
const machineFieldNames = machineFieldTypes.split(", ").map((column) => column.split(" ")[0]).join(", ")

/** A machine's columns as one JSON record (times as ISO text) for `jsonb_to_recordset`. */
const machineRecord = (m: Model.Machine) => ({ id: m.id, ...machines.columns(m, iso) })

export const layer = Layer.effect(
  Ports.MachineRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls

    const machineSelect = sql`
      SELECT m.*, COALESCE((
        SELECT json_agg(json_build_object('id', c.id::text, 'kind', c.kind, 'fingerprint', c.fingerprint, 'name', c.name) ORDER BY c.id)
        FROM lm_machine_components c WHERE c.machine_id = m.id
      ), '[]'::json) AS components
      FROM lm_machines m`

    /** A machine's columns as statement parameters. */
    const machineColumns = (m: Omit<Model.Machine, "id" | "components">) => machines.columns(m, date, (meta) => sql.json(meta))

    const findMachine = (id: number) => sql`${machineSelect} WHERE m.id = ${id}`.pipe(Effect.flatMap(firstMachine))

    const writeComponents = (machineId: number, components: ReadonlyArray<{ kind: string; fingerprint: string; name: string | null }>) => {
      const [first, ...rest] = components.map((c) => ({ machine_id: machineId, kind: c.kind, fingerprint: c.fingerprint, name: c.name }))
      return first === undefined ? Effect.void : sql`INSERT INTO lm_machine_components ${sql.insert([first, ...rest])}`.pipe(Effect.asVoid)
    }

    /** The machine just written, read back with its components (it exists: the same transaction wrote it). */
    const readBack = (id: number) =>
      Effect.flatMap(findMachine(id), (machine) =>
        machine === undefined ? Effect.die(new Error(`The machine ${id} just written was not found`)) : Effect.succeed(machine))

    return Ports.MachineRepository.of({
      // Without components a write is one statement (no savepoint, no read back): the activation hot path.
      insert: (draft) =>
        draft.components.length === 0
          ? sql`INSERT INTO lm_machines ${sql.insert(machineColumns(draft))} RETURNING *, '[]'::json AS components`.pipe(
            Effect.flatMap(oneMachine),
            orUnavailable
          )
          : sql.withTransaction(
            Effect.gen(function*() {
              const { id } = yield* sql`INSERT INTO lm_machines ${sql.insert(machineColumns(draft))} RETURNING id`.pipe(Effect.flatMap(oneId))
              yield* writeComponents(id, draft.components)
              return yield* readBack(id)
            })
          ).pipe(orUnavailable),
      update: (machine, components) =>
        components === undefined
          ? sql`UPDATE lm_machines SET ${sql.update(machineColumns(machine))} WHERE id = ${machine.id}`.pipe(
            Effect.as(machine),
            orUnavailable
          )
          : sql.withTransaction(
            Effect.gen(function*() {
              yield* sql`UPDATE lm_machines SET ${sql.update(machineColumns(machine))} WHERE id = ${machine.id}`
              yield* sql`DELETE FROM lm_machine_components WHERE machine_id = ${machine.id}`
              yield* writeComponents(machine.id, components)
              return (yield* findMachine(machine.id)) ?? machine
            })
          ).pipe(orUnavailable),
      // One statement for a whole batch of seat changes: machines inserted and updated, events appended as the
      // outbox appends them (`appendEvents`; those about an inserted machine get its id). PostgreSQL runs every
      // data-modifying WITH part to completion, whether or not the final SELECT reads it.
      writeSeatChanges: ({ events, inserts, updates }) =>
        inserts.length === 0 && updates.length === 0 && events.length === 0
          ? Effect.succeed([])
          : sql`
          WITH ins AS (
            INSERT INTO lm_machines (${sql.literal(machineFieldNames)})
            SELECT ${sql.literal(machineFieldNames)}
            FROM jsonb_to_recordset(${JSON.stringify(inserts.map((d, ord) => ({ ord, ...machineRecord({ ...d, id: 0, components: [] }) })))}::jsonb)
              AS d(ord int, ${sql.literal(machineFieldTypes)})
            ORDER BY d.ord
            RETURNING *
          ), upd AS (
            UPDATE lm_machines AS m SET ${sql.literal(machineFieldNames.split(", ").map((f) => `${f} = v.${f}`).join(", "))}
            FROM jsonb_to_recordset(${JSON.stringify(updates.map(machineRecord))}::jsonb) AS v(id bigint, ${sql.literal(machineFieldTypes)})
            WHERE m.id = v.id
            RETURNING m.id
          ), ${
            appendEvents(
              sql,
              events.map(({ event, insertIndex }) => ({
                event,
                insertedMachine: insertIndex === undefined ? undefined : inserts[insertIndex]!
              })),
              "ins"
            )
          }
          SELECT i.*, '[]'::json AS components FROM ins i`.pipe(
            Effect.flatMap(machineRows),
            Effect.flatMap((rows) => {
              const byFingerprint = new Map(rows.map((machine) => [`${machine.licenseId}\u0000${machine.fingerprint}`, machine]))
              return Effect.forEach(inserts, (draft) => {
                const machine = byFingerprint.get(`${draft.licenseId}\u0000${draft.fingerprint}`)
                return machine === undefined
                  ? Effect.die(new Error("writeSeatChanges: an inserted machine was not returned"))
                  : Effect.succeed(machine)
              })
            }),
            orUnavailable
          ),
      listForSeatChanges: (named) =>
        named.length === 0
          ? Effect.succeed([])
          : sql`${machineSelect} WHERE m.id IN (
              SELECT id FROM lm_machines WHERE license_id IN ${sql.in([...new Set(named.map((n) => n.licenseId))])} AND status = 'active'
              UNION
              SELECT x.id FROM jsonb_to_recordset(${
            JSON.stringify(named.map((n) => ({ license_id: n.licenseId, fingerprint: n.fingerprint })))
          }::jsonb) AS r(license_id bigint, fingerprint text)
              JOIN lm_machines x ON x.license_id = r.license_id AND x.fingerprint = r.fingerprint
            ) ORDER BY m.id`.pipe(
            Effect.flatMap(machineRows),
            orUnavailable
          ),
      findById: (id) => findMachine(id).pipe(orUnavailable),
      findByFingerprint: (licenseId, fingerprint) =>
        sql`${machineSelect} WHERE m.license_id = ${licenseId} AND m.fingerprint = ${fingerprint}`.pipe(
          Effect.flatMap(firstMachine),
          orUnavailable
        ),
      listActive: (licenseId) =>
        sql`${machineSelect} WHERE m.license_id = ${licenseId} AND m.status = 'active' ORDER BY m.id`.pipe(
          Effect.flatMap(machineRows),
          orUnavailable
        ),
      listOf: (licenseIds) =>
        licenseIds.length === 0
          ? Effect.succeed([])
          : sql`${machineSelect} WHERE m.license_id IN ${sql.in(licenseIds)} ORDER BY m.id`.pipe(
            Effect.flatMap(machineRows),
            orUnavailable
          ),
      listActiveOf: (licenseIds) =>
        licenseIds.length === 0
          ? Effect.succeed([])
          : sql`${machineSelect} WHERE m.license_id IN ${sql.in(licenseIds)} AND m.status = 'active' ORDER BY m.id`.pipe(
            Effect.flatMap(machineRows),
            orUnavailable
          ),
      listForValidation: (licenseId, fingerprint) =>
        (fingerprint === null
          ? sql`${machineSelect} WHERE m.license_id = ${licenseId} AND m.status = 'active' ORDER BY m.id`
          : sql`${machineSelect} WHERE m.license_id = ${licenseId} AND (m.status = 'active' OR m.fingerprint = ${fingerprint}) ORDER BY m.id`).pipe(
            Effect.flatMap(machineRows),
            orUnavailable
          ),
      list: (licenseId, q) => {
        const filter = q.status === undefined
          ? sql`m.license_id = ${licenseId}`
          : sql`m.license_id = ${licenseId} AND m.status = ${q.status}`
        return Effect.all({
          items: sql`${machineSelect} WHERE ${filter} ORDER BY m.id LIMIT ${q.perPage} OFFSET ${(q.page - 1) * q.perPage}`.pipe(
            Effect.flatMap(machineRows)
          ),
          total: sql`SELECT count(*) AS n FROM lm_machines m WHERE ${filter}`.pipe(Effect.flatMap(count), Effect.map((r) => r.n))
        }).pipe(orUnavailable)
      },
      claimExpired: (now, limit) =>
        sql`
          WITH claimed AS (
            SELECT id FROM lm_machines
            WHERE status = 'active' AND seat_deadline IS NOT NULL AND seat_deadline <= ${date(now)}
            ORDER BY seat_deadline LIMIT ${limit}
            FOR UPDATE SKIP LOCKED
          )
          ${machineSelect} WHERE m.id IN (SELECT id FROM claimed) ORDER BY m.id`.pipe(
          Effect.flatMap(machineRows),
          orUnavailable
        ),
      listRevoked: sql`SELECT id, fingerprint FROM lm_machines WHERE status = 'revoked' ORDER BY id`.pipe(
        Effect.flatMap(revokedRows),
        orUnavailable
      )
    })
  })
)
