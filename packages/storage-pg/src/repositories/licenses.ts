/**
 * The domain's `LicenseRepository` on `lm_licenses`. Its locks are `SELECT … FOR UPDATE` on the license rows, held
 * until the transaction ends; pool draws claim rows with `FOR UPDATE SKIP LOCKED`, so several processes can draw
 * from one pool.
 */
import { Effect, Layer, Schema } from "effect"
import * as Arr from "effect/Array"
import { PgClient } from "@effect/sql-pg/PgClient"
import type { SqlError } from "effect/sql/SqlError"
import { Errors, License, Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { chunk, Count, date, firstOf, Int8, oneOf, rowsOf, tableOf } from "./rows.js"
import { holdsSeat } from "./seats.js"

/** A row of `lm_licenses` (its stored grace end, `grace_ends_at`, is for filtering only and not read back). */
const licenses = tableOf(Model.License, { generated: ["id", "revision"] })
export const LicenseRow = licenses.Row

export const licenseRows = rowsOf(LicenseRow, "lm_licenses")
export const firstLicense = firstOf(LicenseRow, "lm_licenses")
const oneLicense = oneOf(LicenseRow, "lm_licenses")
const count = oneOf(Count, "a count")
const countsRow = oneOf(Schema.Record(Schema.String, Int8), "lm_licenses")
const keys = rowsOf(Schema.Struct({ key: Schema.String }), "lm_licenses")

const escapeLike = (value: string) => value.replace(/[\\%_]/g, (c) => `\\${c}`)

export const layer = Layer.effect(
  Ports.LicenseRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls

    /** A draft's columns as statement parameters (with the grace end the domain computes, for filtering). */
    const licenseColumns = (l: Model.LicenseDraft) => ({
      ...licenses.columns(l, date, (json) => sql.json(json)),
      grace_ends_at: date(License.expiryWithGrace(l))
    })

    const uniqueKey = <A>(effect: Effect.Effect<A, SqlError>) =>
      Effect.catchIf(
        effect,
        (e) => e.reason._tag === "UniqueViolation",
        () => Effect.fail(Errors.licenseExists())
      )

    /**
     * The WHERE condition of a filter. With `holderJoined`, the seat-holder test reads the joined set of licenses
     * holding a seat (`holder`, see `countEach`) instead of probing the machines once per license.
     */
    const filterOf = (q: Ports.LicenseFilter, holderJoined = false) => {
      const where = [
        q.states !== undefined ? sql`state IN ${sql.in(q.states)}` : undefined,
        q.productId !== undefined ? sql`product_id = ${q.productId}` : undefined,
        q.orderId !== undefined ? sql`order_id = ${q.orderId}` : undefined,
        q.userId !== undefined ? sql`user_id = ${q.userId}` : undefined,
        q.generatorId !== undefined ? sql`generator_id = ${q.generatorId}` : undefined,
        q.keyPrefix !== undefined ? sql`key LIKE ${escapeLike(q.keyPrefix) + "%"}` : undefined,
        q.idAfter !== undefined ? sql`id > ${q.idAfter}` : undefined,
        q.expiresBefore !== undefined ? sql`expires_at < ${date(q.expiresBefore)}` : undefined,
        q.expiresAfter !== undefined ? sql`expires_at > ${date(q.expiresAfter)}` : undefined,
        q.expiredAt !== undefined
          ? q.expiredAt.value
            ? sql`(grace_ends_at IS NOT NULL AND grace_ends_at < ${date(q.expiredAt.at)})`
            : sql`(grace_ends_at IS NULL OR grace_ends_at >= ${date(q.expiredAt.at)})`
          : undefined,
        q.hasSeatHolderAt === undefined
          ? undefined
          : holderJoined
          ? sql`holder.license_id IS ${sql.literal(q.hasSeatHolderAt.value ? "NOT NULL" : "NULL")}`
          : sql`${sql.literal(q.hasSeatHolderAt.value ? "" : "NOT ")}EXISTS (SELECT 1 FROM lm_machines m WHERE m.license_id = lm_licenses.id AND ${holdsSeat(sql, "m", q.hasSeatHolderAt.at)})`
      ].filter((c) => c !== undefined)
      return where.length === 0 ? sql`TRUE` : sql.and(where)
    }

    return Ports.LicenseRepository.of({
      lockByKey: (key) => sql`SELECT * FROM lm_licenses WHERE key = ${key} FOR UPDATE`.pipe(Effect.flatMap(firstLicense), orUnavailable),
      lockById: (id) => sql`SELECT * FROM lm_licenses WHERE id = ${id} FOR UPDATE`.pipe(Effect.flatMap(firstLicense), orUnavailable),
      lockByKeys: (keys) =>
        keys.length === 0
          ? Effect.succeed([])
          : sql`SELECT * FROM lm_licenses WHERE key IN ${sql.in([...new Set(keys)])} ORDER BY id FOR UPDATE`.pipe(
            Effect.flatMap(licenseRows),
            orUnavailable
          ),
      insert: (draft) =>
        sql`INSERT INTO lm_licenses ${sql.insert(licenseColumns(draft))} RETURNING *`.pipe(
          uniqueKey,
          Effect.flatMap(oneLicense),
          orUnavailable
        ),
      insertMany: (drafts) =>
        drafts.length === 0
          ? Effect.succeed([])
          : sql.withTransaction(
            Effect.forEach(
              chunk(drafts, 500),
              (batch) => sql`INSERT INTO lm_licenses ${sql.insert(Arr.map(batch, licenseColumns))} RETURNING *`,
              { concurrency: 1 }
            )
          ).pipe(
            uniqueKey,
            Effect.flatMap((batches) => licenseRows(batches.flat())),
            orUnavailable
          ),
      findByKey: (key) => sql`SELECT * FROM lm_licenses WHERE key = ${key}`.pipe(Effect.flatMap(firstLicense), orUnavailable),
      findById: (id) => sql`SELECT * FROM lm_licenses WHERE id = ${id}`.pipe(Effect.flatMap(firstLicense), orUnavailable),
      list: (q) => {
        const filter = filterOf(q)
        const column = sql.literal(q.orderBy === "created_at" ? "created_at" : q.orderBy === "expires_at" ? "expires_at" : "id")
        const direction = sql.literal(q.order === "asc" ? "ASC" : "DESC")
        const nulls = sql.literal(q.order === "asc" ? "NULLS LAST" : "NULLS FIRST")
        return Effect.all({
          items: sql`SELECT * FROM lm_licenses WHERE ${filter} ORDER BY ${column} ${direction} ${nulls}, id ${direction} LIMIT ${q.perPage} OFFSET ${(q.page - 1) * q.perPage}`
            .pipe(Effect.flatMap(licenseRows)),
          total: q.withTotal === false
            ? Effect.succeed(0)
            : sql`SELECT count(*) AS n FROM lm_licenses WHERE ${filter}`.pipe(Effect.flatMap(count), Effect.map((r) => r.n))
        }).pipe(orUnavailable)
      },
      // One scan of the licenses, each filter a FILTER clause. The seat-holder tests (the overview's active and
      // inactive counts share one time) join the licenses holding a seat once, a hash join, instead of an EXISTS
      // probe per license.
      countEach: (filters) => {
        if (filters.length === 0) return Effect.succeed([])
        const times = new Set(filters.flatMap((f) => f.hasSeatHolderAt === undefined ? [] : [f.hasSeatHolderAt.at]))
        const holderAt = times.size === 1 ? [...times][0]! : undefined
        const from = holderAt === undefined
          ? sql`lm_licenses`
          : sql`lm_licenses LEFT JOIN (
              SELECT DISTINCT m.license_id FROM lm_machines m WHERE ${holdsSeat(sql, "m", holderAt)}
            ) AS holder ON holder.license_id = lm_licenses.id`
        const columns = filters.map((f, i) => sql`count(*) FILTER (WHERE ${filterOf(f, holderAt !== undefined)})::int8 AS ${sql(`c${i}`)}`)
        return sql`SELECT ${sql.csv(columns)} FROM ${from}`.pipe(
          Effect.flatMap(countsRow),
          Effect.map((row) => filters.map((_, i) => row[`c${i}`]!)),
          orUnavailable
        )
      },
      update: (license) =>
        sql`UPDATE lm_licenses SET ${sql.update({ ...licenseColumns(license), revision: license.revision })} WHERE id = ${license.id} RETURNING *`.pipe(
          Effect.flatMap(firstLicense),
          Effect.map((updated) => updated ?? license),
          orUnavailable
        ),
      delete: (id) => sql`DELETE FROM lm_licenses WHERE id = ${id}`.pipe(Effect.asVoid, orUnavailable),
      claimFromPool: (generatorId) =>
        sql`SELECT * FROM lm_licenses WHERE generator_id = ${generatorId} AND state = 'pending' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`.pipe(
          Effect.flatMap(firstLicense),
          orUnavailable
        ),
      poolSize: (generatorId) =>
        sql`SELECT count(*) AS n FROM lm_licenses WHERE generator_id = ${generatorId} AND state = 'pending'`.pipe(
          Effect.flatMap(count),
          Effect.map((r) => r.n),
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
          : sql`SELECT key FROM lm_licenses WHERE state IN ${sql.in(states)} ORDER BY id`.pipe(
            Effect.flatMap(keys),
            Effect.map((r) => r.map((row) => row.key)),
            orUnavailable
          )
    })
  })
)
