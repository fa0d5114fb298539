/**
 * The domain's `PolicyRepository` on `lm_policies`. Licenses refer to a policy through a foreign key, so a delete
 * of a policy that a license refers to fails (`policy_in_use`), also when that license's insert is not committed
 * yet: the insert's key-share lock on the policy row makes the delete wait for it.
 */
import { Effect, Layer, Schema, Struct } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Errors, Model, Ports } from "@lm/domain"
import { orUnavailable } from "./failures.js"
import { licenseRows } from "./licenses.js"
import { Count, date, firstOf, Int8, oneOf, rowsOf, Timestamp } from "./rows.js"

/** The column of each field of a policy whose name differs (snake_case), for reading and writing rows. */
const policyColumnNames = {
  productId: "product_id",
  maxActivations: "max_activations",
  overageStrategy: "overage_strategy",
  isFloating: "is_floating",
  leaseDuration: "lease_duration",
  requireHeartbeat: "require_heartbeat",
  heartbeatInterval: "heartbeat_interval",
  validForDays: "valid_for_days",
  graceDays: "grace_days",
  createdAt: "created_at",
  updatedAt: "updated_at"
} as const

/** A row of `lm_policies`. */
const PolicyRow = Schema.Struct({
  id: Int8,
  name: Schema.String,
  productId: Schema.NullOr(Int8),
  entitlements: Model.Entitlements,
  maxActivations: Schema.NullOr(Schema.Int),
  overageStrategy: Model.OverageStrategy,
  isFloating: Schema.Boolean,
  leaseDuration: Schema.Int,
  requireHeartbeat: Schema.Boolean,
  heartbeatInterval: Schema.Int,
  validForDays: Schema.NullOr(Schema.Int),
  graceDays: Schema.Int,
  createdAt: Timestamp,
  updatedAt: Timestamp
}).pipe(Schema.encodeKeys(policyColumnNames))

const policyRows = rowsOf(PolicyRow, "lm_policies")
const firstPolicy = firstOf(PolicyRow, "lm_policies")
const onePolicy = oneOf(PolicyRow, "lm_policies")
const count = oneOf(Count, "a count")
const counts = rowsOf(Schema.Struct({ policy_id: Int8, n: Int8 }), "lm_licenses")

export const layer = Layer.effect(
  Ports.PolicyRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient

    /** A policy's columns but its id, as statement parameters. */
    const policyColumns = (p: Model.PolicyDraft) =>
      Struct.renameKeys({
        name: p.name,
        productId: p.productId,
        entitlements: sql.json(p.entitlements),
        maxActivations: p.maxActivations,
        overageStrategy: p.overageStrategy,
        isFloating: p.isFloating,
        leaseDuration: p.leaseDuration,
        requireHeartbeat: p.requireHeartbeat,
        heartbeatInterval: p.heartbeatInterval,
        validForDays: p.validForDays,
        graceDays: p.graceDays,
        createdAt: date(p.createdAt),
        updatedAt: date(p.updatedAt)
      }, policyColumnNames)

    return Ports.PolicyRepository.of({
      insert: (draft) =>
        sql`INSERT INTO lm_policies ${sql.insert(policyColumns(draft))} RETURNING *`.pipe(Effect.flatMap(onePolicy), orUnavailable),
      findById: (id) => sql`SELECT * FROM lm_policies WHERE id = ${id}`.pipe(Effect.flatMap(firstPolicy), orUnavailable),
      lockById: (id) => sql`SELECT * FROM lm_policies WHERE id = ${id} FOR UPDATE`.pipe(Effect.flatMap(firstPolicy), orUnavailable),
      list: (q) => {
        const filter = q.productId === undefined ? sql`TRUE` : sql`product_id = ${q.productId}`
        return Effect.all({
          items: sql`SELECT * FROM lm_policies WHERE ${filter} ORDER BY id ASC LIMIT ${q.perPage} OFFSET ${(q.page - 1) * q.perPage}`.pipe(
            Effect.flatMap(policyRows)
          ),
          total: sql`SELECT count(*) AS n FROM lm_policies WHERE ${filter}`.pipe(Effect.flatMap(count), Effect.map((r) => r.n))
        }).pipe(orUnavailable)
      },
      update: (p) =>
        sql`UPDATE lm_policies SET ${sql.update(policyColumns(p))} WHERE id = ${p.id} RETURNING *`.pipe(
          Effect.flatMap(firstPolicy),
          Effect.map((updated) => updated ?? p),
          orUnavailable
        ),
      delete: (id) =>
        sql`DELETE FROM lm_policies WHERE id = ${id}`.pipe(
          Effect.asVoid,
          Effect.catchIf((e) => e.reason._tag === "ConstraintError", () => Effect.fail(Errors.policyInUse())),
          orUnavailable
        ),
      licenseCounts: (ids) =>
        ids.length === 0
          ? Effect.succeed([])
          : sql`SELECT policy_id, count(*) AS n FROM lm_licenses WHERE policy_id IN ${sql.in(ids)} GROUP BY policy_id`.pipe(
            Effect.flatMap(counts),
            Effect.map((rows) => ids.map((id) => rows.find((r) => r.policy_id === id)?.n ?? 0)),
            orUnavailable
          ),
      lockLicenses: (policyId) =>
        sql`SELECT * FROM lm_licenses WHERE policy_id = ${policyId} ORDER BY id FOR UPDATE`.pipe(Effect.flatMap(licenseRows), orUnavailable)
    })
  })
)
