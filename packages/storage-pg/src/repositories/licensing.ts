/**
 * The domain's ports on @effect/sql-pg: the same queries on a PostgreSQL server and on PGlite. The domain's
 * `transaction` is a SQL transaction, `lockLicense` is `SELECT … FOR UPDATE` on the license row, and pool draws
 * and the sweep claim rows with `FOR UPDATE SKIP LOCKED`, so several processes can share one database.
 */
import { Context, Effect, Layer } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import type { SqlError } from "effect/sql/SqlError"
import { Errors, License, Model, Ports } from "@lm/domain"
import { date, millis, num, orUnavailable, toApiKey, toGenerator, toLicense, toMachine } from "./rows.js"

/** How often a transaction that lost a deadlock is retried before the failure is reported. */
const DEADLOCK_RETRIES = 3

const isDeadlock = (error: unknown): boolean =>
  (error as { readonly _tag?: string })?._tag === "SqlError" && (error as SqlError).reason._tag === "DeadlockError"

/**
 * Most event-log rows written by one INSERT (default 1000). Embedded PGlite runs each statement on the server's
 * own thread, so a large insert stalls every request for its whole duration: its store writes smaller ones,
 * between which requests are answered.
 */
export const EventLogRowsPerInsert = Context.Reference<number>("@lm/storage-pg/EventLogRowsPerInsert", {
  defaultValue: () => 1000
})

/** Every port of the domain on the `SqlClient` in context. */
export const layer = Layer.effectContext(
  Effect.gen(function*() {
    const sql = yield* PgClient
    const eventLogRowsPerInsert = Math.max(1, yield* EventLogRowsPerInsert)

    // ---- licenses -----------------------------------------------------------------------------------------
    const licenseColumns = (l: Model.LicenseDraft) => ({
      key: l.key,
      state: l.state,
      product_id: l.productId,
      order_id: l.orderId,
      user_id: l.userId,
      max_activations: l.maxActivations,
      overage_strategy: l.overageStrategy,
      is_floating: l.isFloating,
      lease_duration: l.leaseDuration,
      require_heartbeat: l.requireHeartbeat,
      heartbeat_interval: l.heartbeatInterval,
      valid_for_days: l.validForDays,
      expires_at: date(l.expiresAt),
      grace_days: l.graceDays,
      grace_ends_at: date(License.expiryWithGrace(l)),
      activated_at: date(l.activatedAt),
      source: l.source,
      generator_id: l.generatorId,
      subscription_id: l.subscriptionId,
      meta: sql.json(l.meta),
      created_at: date(l.createdAt),
      updated_at: date(l.updatedAt)
    })

    const uniqueKey = <A>(effect: Effect.Effect<A, SqlError>) =>
      Effect.catchIf(
        effect,
        (e) => e.reason._tag === "UniqueViolation",
        () => Effect.fail(Errors.licenseExists())
      )

    const one = <A>(rows: ReadonlyArray<A>): A | undefined => rows[0]

    const licenses = Ports.LicenseRepository.of({
      insert: (draft) =>
        sql`INSERT INTO lm_licenses ${sql.insert(licenseColumns(draft))} RETURNING *`.pipe(
          uniqueKey,
          Effect.map((rows) => toLicense(rows[0]!)),
          orUnavailable
        ),
      insertMany: (drafts) =>
        drafts.length === 0
          ? Effect.succeed([])
          : sql.withTransaction(
            Effect.forEach(
              chunk(drafts, 500),
              (batch) => sql`INSERT INTO lm_licenses ${sql.insert(nonEmpty(batch.map(licenseColumns)))} RETURNING *`,
              { concurrency: 1 }
            )
          ).pipe(
            uniqueKey,
            Effect.map((batches) => batches.flat().map(toLicense)),
            orUnavailable
          ),
      findByKey: (key) => sql`SELECT * FROM lm_licenses WHERE key = ${key}`.pipe(Effect.map((r) => one(r.map(toLicense))), orUnavailable),
      findById: (id) => sql`SELECT * FROM lm_licenses WHERE id = ${id}`.pipe(Effect.map((r) => one(r.map(toLicense))), orUnavailable),
      list: (q) => {
        const where = [
          q.states !== undefined ? sql`state IN ${sql.in(q.states as Array<string>)}` : undefined,
          q.productId !== undefined ? sql`product_id = ${q.productId}` : undefined,
          q.orderId !== undefined ? sql`order_id = ${q.orderId}` : undefined,
          q.userId !== undefined ? sql`user_id = ${q.userId}` : undefined,
          q.generatorId !== undefined ? sql`generator_id = ${q.generatorId}` : undefined,
          q.keyPrefix !== undefined ? sql`key LIKE ${escapeLike(q.keyPrefix) + "%"}` : undefined,
          q.expiresBefore !== undefined ? sql`expires_at < ${date(q.expiresBefore)}` : undefined,
          q.expiresAfter !== undefined ? sql`expires_at > ${date(q.expiresAfter)}` : undefined,
          q.expiredAt !== undefined
            ? q.expiredAt.value
              ? sql`(grace_ends_at IS NOT NULL AND grace_ends_at < ${date(q.expiredAt.at)})`
              : sql`(grace_ends_at IS NULL OR grace_ends_at >= ${date(q.expiredAt.at)})`
            : undefined,
          q.hasSeatHolderAt !== undefined
            ? sql`${sql.literal(q.hasSeatHolderAt.value ? "" : "NOT ")}EXISTS (SELECT 1 FROM lm_machines m WHERE m.license_id = lm_licenses.id AND m.status = 'active' AND (m.seat_deadline IS NULL OR m.seat_deadline > ${date(q.hasSeatHolderAt.at)}))`
            : undefined
        ].filter((c) => c !== undefined)
        const filter = where.length === 0 ? sql`TRUE` : sql.and(where)
        const column = sql.literal(q.orderBy === "created_at" ? "created_at" : q.orderBy === "expires_at" ? "expires_at" : "id")
        const direction = sql.literal(q.order === "asc" ? "ASC" : "DESC")
        const nulls = sql.literal(q.order === "asc" ? "NULLS LAST" : "NULLS FIRST")
        return Effect.all({
          rows: sql`SELECT * FROM lm_licenses WHERE ${filter} ORDER BY ${column} ${direction} ${nulls}, id ${direction} LIMIT ${q.perPage} OFFSET ${(q.page - 1) * q.perPage}`,
          total: sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM lm_licenses WHERE ${filter}`
        }).pipe(
          Effect.map(({ rows, total }) => ({ items: rows.map(toLicense), total: num(total[0]?.n ?? 0) })),
          orUnavailable
        )
      },
      update: (license) =>
        sql`UPDATE lm_licenses SET ${sql.update({ ...licenseColumns(license), revision: license.revision })} WHERE id = ${license.id} RETURNING *`.pipe(
          Effect.map((rows) => (rows[0] === undefined ? license : toLicense(rows[0]))),
          orUnavailable
        ),
      delete: (id) => sql`DELETE FROM lm_licenses WHERE id = ${id}`.pipe(Effect.asVoid, orUnavailable),
      claimFromPool: (generatorId) =>
        sql`SELECT * FROM lm_licenses WHERE generator_id = ${generatorId} AND state = 'pending' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`.pipe(
          Effect.map((r) => one(r.map(toLicense))),
          orUnavailable
        ),
      poolSize: (generatorId) =>
        sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM lm_licenses WHERE generator_id = ${generatorId} AND state = 'pending'`.pipe(
          Effect.map((r) => num(r[0]?.n ?? 0)),
          orUnavailable
        ),
      deletePool: (generatorId) =>
        sql`DELETE FROM lm_licenses WHERE generator_id = ${generatorId} AND state = 'pending' RETURNING id`.pipe(
          Effect.map((r) => r.length),
          orUnavailable
        ),
      keysInStates: (states) =>
        states.length === 0
          ? Effect.succeed([])
          : sql<{ readonly key: string }>`SELECT key FROM lm_licenses WHERE state IN ${sql.in(states as Array<string>)} ORDER BY id`.pipe(
            Effect.map((r) => r.map((row) => row.key)),
            orUnavailable
          )
    })

    // ---- machines -----------------------------------------------------------------------------------------
    const machineSelect = sql`
      SELECT m.*, COALESCE((
        SELECT json_agg(json_build_object('id', c.id, 'kind', c.kind, 'fingerprint', c.fingerprint, 'name', c.name) ORDER BY c.id)
        FROM lm_machine_components c WHERE c.machine_id = m.id
      ), '[]'::json) AS components
      FROM lm_machines m`

    /** A machine's columns but its id, with times and `meta` written by the given functions. */
    const machineFields = <T, J>(
      m: Omit<Model.Machine, "id" | "components">,
      time: (value: number | null) => T,
      json: (value: Model.Machine["meta"]) => J
    ) => ({
      license_id: m.licenseId,
      fingerprint: m.fingerprint,
      name: m.name,
      hostname: m.hostname,
      platform: m.platform,
      app_version: m.appVersion,
      ip_address: m.ipAddress,
      status: m.status,
      activated_at: time(m.activatedAt),
      deactivated_at: time(m.deactivatedAt),
      deactivation_reason: m.deactivationReason,
      last_heartbeat_at: time(m.lastHeartbeatAt),
      lease_expires_at: time(m.leaseExpiresAt),
      seat_deadline: time(m.seatDeadline),
      meta: json(m.meta),
      created_at: time(m.createdAt)
    })

    /** A machine's columns as statement parameters. */
    const machineColumns = (m: Omit<Model.Machine, "id" | "components">) => machineFields(m, date, (meta) => sql.json(meta))

    /** The columns of a machine row but its id, and their types (for `jsonb_to_recordset`). */
    const machineFieldTypes = "license_id bigint, fingerprint text, name text, hostname text, platform text, app_version text, " +
      "ip_address text, status text, activated_at timestamptz, deactivated_at timestamptz, deactivation_reason text, " +
      "last_heartbeat_at timestamptz, lease_expires_at timestamptz, seat_deadline timestamptz, meta jsonb, created_at timestamptz"
    const machineFieldNames = machineFieldTypes.split(", ").map((column) => column.split(" ")[0]).join(", ")

    /** A machine's columns as one JSON record (times as ISO text) for `jsonb_to_recordset`. */
    const machineRecord = (m: Model.Machine) => ({ id: m.id, ...machineFields(m, iso, (meta) => meta) })

    const findMachine = (id: number) =>
      sql`${machineSelect} WHERE m.id = ${id}`.pipe(Effect.map((r) => one(r.map(toMachine))))

    const writeComponents = (machineId: number, components: ReadonlyArray<{ kind: string; fingerprint: string; name: string | null }>) =>
      components.length === 0
        ? Effect.void
        : sql`INSERT INTO lm_machine_components ${
          sql.insert(nonEmpty(components.map((c) => ({ machine_id: machineId, kind: c.kind, fingerprint: c.fingerprint, name: c.name }))))
        }`.pipe(Effect.asVoid)

    const machines = Ports.MachineRepository.of({
      // Without components a write is one statement (no savepoint, no read back): the activation hot path.
      insert: (draft) =>
        draft.components.length === 0
          ? sql`INSERT INTO lm_machines ${sql.insert(machineColumns(draft))} RETURNING *, '[]'::json AS components`.pipe(
            Effect.map((rows) => toMachine(rows[0]!)),
            orUnavailable
          )
          : sql.withTransaction(
            Effect.gen(function*() {
              const rows = yield* sql`INSERT INTO lm_machines ${sql.insert(machineColumns(draft))} RETURNING id`
              const id = num(rows[0]!.id)
              yield* writeComponents(id, draft.components)
              return (yield* findMachine(id))!
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
      // One statement for a whole batch of seat changes: machines inserted and updated, events appended (those
      // about an inserted machine get its id by joining on (license, fingerprint), which is unique). PostgreSQL
      // runs every data-modifying WITH part to completion, whether or not the final SELECT reads it.
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
          ), ev AS (
            INSERT INTO lm_events (type, occurred_at, license_id, machine_id, data)
            SELECT e.type, e.occurred_at, e.license_id, COALESCE(i.id, e.machine_id), e.data
            FROM jsonb_to_recordset(${
            JSON.stringify(events.map(({ event, insertIndex }, ord) => ({
              ord,
              type: event.type,
              occurred_at: iso(event.occurredAt),
              license_id: event.licenseId,
              machine_id: insertIndex === undefined ? event.machineId : null,
              data: event.data,
              insert_license_id: insertIndex === undefined ? null : inserts[insertIndex]!.licenseId,
              insert_fingerprint: insertIndex === undefined ? null : inserts[insertIndex]!.fingerprint
            })))
          }::jsonb) AS e(ord int, type text, occurred_at timestamptz, license_id bigint, machine_id bigint, data jsonb,
              insert_license_id bigint, insert_fingerprint text)
            LEFT JOIN ins i ON i.license_id = e.insert_license_id AND i.fingerprint = e.insert_fingerprint
            ORDER BY e.ord
            RETURNING id
          ), seq AS (
            UPDATE lm_counters SET value = value + 1
            WHERE name = 'revocation_seq' AND ${Model.affectsRevocationList(events.map((e) => e.event))}::boolean
            RETURNING value
          )
          SELECT i.*, '[]'::json AS components FROM ins i`.pipe(
            Effect.flatMap((rows) => {
              const byFingerprint = new Map(rows.map((row) => {
                const machine = toMachine(row)
                return [`${machine.licenseId}\u0000${machine.fingerprint}`, machine] as const
              }))
              const inserted = inserts.map((draft) => byFingerprint.get(`${draft.licenseId}\u0000${draft.fingerprint}`))
              return inserted.every((m) => m !== undefined)
                ? Effect.succeed(inserted as ReadonlyArray<Model.Machine>)
                : Effect.die(new Error("writeSeatChanges: an inserted machine was not returned"))
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
            Effect.map((r) => r.map(toMachine)),
            orUnavailable
          ),
      findById: (id) => findMachine(id).pipe(orUnavailable),
      findByFingerprint: (licenseId, fingerprint) =>
        sql`${machineSelect} WHERE m.license_id = ${licenseId} AND m.fingerprint = ${fingerprint}`.pipe(
          Effect.map((r) => one(r.map(toMachine))),
          orUnavailable
        ),
      listActive: (licenseId) =>
        sql`${machineSelect} WHERE m.license_id = ${licenseId} AND m.status = 'active' ORDER BY m.id`.pipe(
          Effect.map((r) => r.map(toMachine)),
          orUnavailable
        ),
      listActiveOf: (licenseIds) =>
        licenseIds.length === 0
          ? Effect.succeed([])
          : sql`${machineSelect} WHERE m.license_id IN ${sql.in(licenseIds as Array<number>)} AND m.status = 'active' ORDER BY m.id`.pipe(
            Effect.map((r) => r.map(toMachine)),
            orUnavailable
          ),
      listForValidation: (licenseId, fingerprint) =>
        (fingerprint === null
          ? sql`${machineSelect} WHERE m.license_id = ${licenseId} AND m.status = 'active' ORDER BY m.id`
          : sql`${machineSelect} WHERE m.license_id = ${licenseId} AND (m.status = 'active' OR m.fingerprint = ${fingerprint}) ORDER BY m.id`).pipe(
            Effect.map((r) => r.map(toMachine)),
            orUnavailable
          ),
      list: (licenseId, q) => {
        const filter = q.status === undefined
          ? sql`m.license_id = ${licenseId}`
          : sql`m.license_id = ${licenseId} AND m.status = ${q.status}`
        return Effect.all({
          rows: sql`${machineSelect} WHERE ${filter} ORDER BY m.id LIMIT ${q.perPage} OFFSET ${(q.page - 1) * q.perPage}`,
          total: sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM lm_machines m WHERE ${filter}`
        }).pipe(
          Effect.map(({ rows, total }) => ({ items: rows.map(toMachine), total: num(total[0]?.n ?? 0) })),
          orUnavailable
        )
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
          Effect.map((r) => r.map(toMachine)),
          orUnavailable
        ),
      listRevoked: sql<{ readonly id: unknown; readonly fingerprint: string }>`SELECT id, fingerprint FROM lm_machines WHERE status = 'revoked' ORDER BY id`.pipe(
        Effect.map((r) => r.map((row) => ({ id: num(row.id), fingerprint: row.fingerprint }))),
        orUnavailable
      )
    })

    // ---- generators ---------------------------------------------------------------------------------------
    const generatorColumns = (g: Omit<Model.Generator, "id">) => ({
      name: g.name,
      charset: g.charset,
      chunk_length: g.chunkLength,
      prefix: g.prefix,
      product_id: g.productId,
      default_max_activations: g.defaultMaxActivations,
      default_valid_days: g.defaultValidDays,
      default_overage_strategy: g.defaultOverageStrategy,
      default_is_floating: g.defaultIsFloating,
      created_at: date(g.createdAt),
      updated_at: date(g.updatedAt)
    })

    const generators = Ports.GeneratorRepository.of({
      insert: (draft) =>
        sql`INSERT INTO lm_generators ${sql.insert(generatorColumns(draft))} RETURNING *`.pipe(
          Effect.map((r) => toGenerator(r[0]!)),
          orUnavailable
        ),
      findById: (id) => sql`SELECT * FROM lm_generators WHERE id = ${id}`.pipe(Effect.map((r) => one(r.map(toGenerator))), orUnavailable),
      list: (page) =>
        Effect.all({
          rows: sql`SELECT * FROM lm_generators ORDER BY id ASC LIMIT ${page.perPage} OFFSET ${(page.page - 1) * page.perPage}`,
          total: sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM lm_generators`
        }).pipe(
          Effect.map(({ rows, total }) => ({ items: rows.map(toGenerator), total: num(total[0]?.n ?? 0) })),
          orUnavailable
        ),
      update: (g) =>
        sql`UPDATE lm_generators SET ${sql.update(generatorColumns(g))} WHERE id = ${g.id} RETURNING *`.pipe(
          Effect.map((r) => (r[0] === undefined ? g : toGenerator(r[0]))),
          orUnavailable
        ),
      delete: (id) => sql`DELETE FROM lm_generators WHERE id = ${id}`.pipe(Effect.asVoid, orUnavailable)
    })

    // ---- API keys -----------------------------------------------------------------------------------------
    const apiKeys = Ports.ApiKeyRepository.of({
      insert: (k) =>
        sql`INSERT INTO lm_api_keys ${
          sql.insert({
            description: k.description,
            scope: k.scope,
            consumer_key_hash: k.consumerKeyHash,
            consumer_secret_hash: k.consumerSecretHash,
            truncated_key: k.truncatedKey,
            created_at: date(k.createdAt),
            last_access_at: date(k.lastAccessAt)
          })
        } RETURNING *`.pipe(Effect.map((r) => toApiKey(r[0]!)), orUnavailable),
      findByConsumerKeyHash: (hash) =>
        sql`SELECT * FROM lm_api_keys WHERE consumer_key_hash = ${hash}`.pipe(Effect.map((r) => one(r.map(toApiKey))), orUnavailable),
      list: (page) =>
        Effect.all({
          rows: sql`SELECT * FROM lm_api_keys ORDER BY id ASC LIMIT ${page.perPage} OFFSET ${(page.page - 1) * page.perPage}`,
          total: sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM lm_api_keys`
        }).pipe(
          Effect.map(({ rows, total }) => ({ items: rows.map(toApiKey), total: num(total[0]?.n ?? 0) })),
          orUnavailable
        ),
      delete: (id) => sql`DELETE FROM lm_api_keys WHERE id = ${id} RETURNING id`.pipe(Effect.map((r) => r.length > 0), orUnavailable),
      count: sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM lm_api_keys`.pipe(Effect.map((r) => num(r[0]?.n ?? 0)), orUnavailable),
      touch: (id, at) => sql`UPDATE lm_api_keys SET last_access_at = ${date(at)} WHERE id = ${id}`.pipe(Effect.asVoid, orUnavailable)
    })

    // ---- signing keys -------------------------------------------------------------------------------------
    const signingKeys = Ports.SigningKeyRepository.of({
      list: sql<{ kid: string; seed: string; public_key: string; current: boolean; created_at: unknown }>`SELECT * FROM lm_signing_keys ORDER BY created_at, kid`.pipe(
        Effect.map((r) => r.map((row) => ({ kid: row.kid, seed: row.seed, publicKey: row.public_key, current: row.current, createdAt: millis(row.created_at) }))),
        orUnavailable
      ),
      insert: (key) =>
        sql.withTransaction(
          Effect.gen(function*() {
            if (key.current) yield* sql`UPDATE lm_signing_keys SET current = false WHERE current`
            yield* sql`INSERT INTO lm_signing_keys ${
              sql.insert({ kid: key.kid, seed: key.seed, public_key: key.publicKey, current: key.current, created_at: date(key.createdAt) })
            } ON CONFLICT (kid) DO UPDATE SET current = EXCLUDED.current`
          })
        ).pipe(orUnavailable),
      replaceSeed: (kid, seed) => sql`UPDATE lm_signing_keys SET seed = ${seed} WHERE kid = ${kid}`.pipe(Effect.asVoid, orUnavailable),
      retire: (kid) =>
        sql`DELETE FROM lm_signing_keys WHERE kid = ${kid} AND NOT current RETURNING kid`.pipe(
          Effect.map((rows) => rows.length > 0),
          orUnavailable
        )
    })

    // ---- outbox and event log -----------------------------------------------------------------------------
    const outbox = Ports.EventOutbox.of({
      append: (events) =>
        events.length === 0
          ? Effect.void
          : Effect.gen(function*() {
            yield* sql`INSERT INTO lm_events ${
              sql.insert(nonEmpty(events.map((e) => ({
                type: e.type,
                occurred_at: date(e.occurredAt),
                license_id: e.licenseId,
                machine_id: e.machineId,
                data: sql.json(e.data)
              }))))
            }`
            if (Model.affectsRevocationList(events)) yield* sql`UPDATE lm_counters SET value = value + 1 WHERE name = 'revocation_seq'`
          }).pipe(orUnavailable),
      readAfter: (afterId, limit) =>
        sql`SELECT * FROM lm_events WHERE id > ${afterId} ORDER BY id LIMIT ${limit}`.pipe(
          Effect.map((rows) =>
            rows.map((row: any) => ({
              id: num(row.id),
              type: row.type,
              occurredAt: millis(row.occurred_at),
              licenseId: row.license_id === null ? null : num(row.license_id),
              machineId: row.machine_id === null ? null : num(row.machine_id),
              data: typeof row.data === "string" ? JSON.parse(row.data) : row.data
            }))
          ),
          orUnavailable
        ),
      revocationSeq: sql<{ readonly value: unknown }>`SELECT value FROM lm_counters WHERE name = 'revocation_seq'`.pipe(
        Effect.map((r) => num(r[0]?.value ?? 0)),
        orUnavailable
      )
    })

    /** One event-log row, as the single-row insert writes it. */
    const activityRow = (e: Model.ActivityEntry) => ({
      kind: e.kind,
      license_id: e.licenseId,
      license_key: e.licenseKey,
      machine_id: e.machineId,
      fingerprint: e.fingerprint,
      ip_address: e.ipAddress,
      app_version: e.appVersion,
      result: e.result,
      at: date(e.at)
    })

    /**
     * Many rows in one statement with one parameter: the entries as a JSON array, unpacked by
     * `json_to_recordset`. The statement text stays the same whatever the number of rows, so neither the
     * client nor the server builds or parses a statement with thousands of placeholders.
     */
    const insertActivity = (batch: ReadonlyArray<Model.ActivityEntry>) =>
      batch.length === 1
        ? sql`INSERT INTO lm_activity ${sql.insert(activityRow(batch[0]!))}`
        : sql`
          INSERT INTO lm_activity (kind, license_id, license_key, machine_id, fingerprint, ip_address, app_version, result, at)
          SELECT kind, license_id, license_key, machine_id, fingerprint, ip_address, app_version, result, at
          FROM json_to_recordset(${JSON.stringify(batch.map((e) => ({ ...activityRow(e), at: new Date(e.at).toISOString() })))}::json)
            AS e(kind text, license_id bigint, license_key text, machine_id bigint, fingerprint text, ip_address text,
                 app_version text, result text, at timestamptz)`

    const activity = Ports.ActivityLog.of({
      // A batch the store refuses (e.g. text it cannot hold) is retried entry by entry by the recorder, and a
      // single entry is written with ordinary parameters, as any other row.
      record: (entries) =>
        entries.length === 0
          ? Effect.void
          : Effect.forEach(chunk(entries, eventLogRowsPerInsert), insertActivity, { discard: true }).pipe(orUnavailable),
      count: (filter) =>
        (filter.licenseId === undefined
          ? sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM lm_activity`
          : sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM lm_activity WHERE license_id = ${filter.licenseId}`).pipe(
            Effect.map((r) => num(r[0]?.n ?? 0)),
            orUnavailable
          )
    })

    // ---- transactions and locks ---------------------------------------------------------------------------
    const store = Ports.Store.of({
      transaction: (effect) =>
        sql.withTransaction(effect).pipe(
          Effect.retry({ while: isDeadlock, times: DEADLOCK_RETRIES }),
          orUnavailable
        ) as any,
      lockLicense: (key) =>
        sql`SELECT * FROM lm_licenses WHERE key = ${key} FOR UPDATE`.pipe(Effect.map((r) => one(r.map(toLicense))), orUnavailable),
      lockLicenses: (keys) =>
        keys.length === 0
          ? Effect.succeed([])
          : sql`SELECT * FROM lm_licenses WHERE key IN ${sql.in([...new Set(keys)])} ORDER BY id FOR UPDATE`.pipe(
            Effect.map((r) => r.map(toLicense)),
            orUnavailable
          ),
      lockLicenseById: (id) =>
        sql`SELECT * FROM lm_licenses WHERE id = ${id} FOR UPDATE`.pipe(Effect.map((r) => one(r.map(toLicense))), orUnavailable),
      ping: sql`SELECT 1`.pipe(Effect.asVoid, orUnavailable)
    })

    return Context.make(Ports.Store, store).pipe(
      Context.add(Ports.LicenseRepository, licenses),
      Context.add(Ports.MachineRepository, machines),
      Context.add(Ports.GeneratorRepository, generators),
      Context.add(Ports.ApiKeyRepository, apiKeys),
      Context.add(Ports.SigningKeyRepository, signingKeys),
      Context.add(Ports.EventOutbox, outbox),
      Context.add(Ports.ActivityLog, activity)
    )
  })
)

const chunk = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

const iso = (value: number | null): string | null => (value === null ? null : new Date(value).toISOString())

const escapeLike = (value: string) => value.replace(/[\\%_]/g, (c) => `\\${c}`)

/** The insert helper takes a non-empty list; callers check for empty input first. */
const nonEmpty = <A>(items: ReadonlyArray<A>) => items as unknown as readonly [Record<string, unknown>, ...Array<Record<string, unknown>>]
