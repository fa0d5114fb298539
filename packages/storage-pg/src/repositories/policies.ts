/**
 * The domain's `PolicyRepository` on `lm_policies`. Licenses refer to a policy through a foreign key, so a delete
 * of a policy that a license refers to fails (`policy_in_use`), also when that license's insert is not committed
 * yet: the insert's key-share lock on the policy row makes the delete wait for it.
 */
import { Effect, Layer, Schema } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Errors, Model, Ports } from "@lm/domain"
import { storeCalls } from "./failures.js"
import { licenseRows } from "./licenses.js"
import { Count, date, firstOf, Int8, oneOf, rowsOf, tableOf } from "./rows.js"

/** A row of `lm_policies`. */
const policies = tableOf(Model.Policy, { generated: ["id"] })
const PolicyRow = policies.Row

const policyRows = rowsOf(PolicyRow, "lm_policies")
const firstPolicy = firstOf(PolicyRow, "lm_policies")
const onePolicy = oneOf(PolicyRow, "lm_policies")
const count = oneOf(Count, "a count")
const counts = rowsOf(Schema.Struct({ policy_id: Int8, n: Int8 }), "lm_licenses")

export const layer = Layer.effect(
  Ports.PolicyRepository,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls

    /** A policy's columns but its id, as statement parameters. */
    const policyColumns = (p: Model.PolicyDraft) => policies.columns(p, date, (json) => sql.json(json))

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
