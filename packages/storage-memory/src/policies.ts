/**
 * The domain's `PolicyRepository` in memory. A delete takes the policy's row lock, which a transaction inserting or
 * moving a license to the policy holds until it ends (`licenses.ts`), and then looks for licenses of it: a policy
 * in use is never deleted, as PostgreSQL's foreign key ensures.
 */
import { Errors, type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import { byId, frozen, pageOf, type Tables } from "./Tables.js"

export const make = (t: Tables): Ports.PolicyRepository["Service"] => {
  const { db, eraseRow, insertRows, licenses, lockName, lockRow, policies, read, replace } = t

  return Ports.PolicyRepository.of({
    insert: (draft: Model.PolicyDraft) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<Model.Policy>({ ...draft, id: policies.nextId() })
          return Effect.map(insertRows(tx, policies, [row]), () => row)
        })
      ),
    findById: (id) => read((tx) => policies.get(db.overlayOf(tx, policies), id)),
    lockById: (id) => db.inTransaction((tx) => lockRow(tx, policies, id)),
    list: (q) =>
      read((tx) =>
        pageOf(
          [...policies.all(db.overlayOf(tx, policies))].filter((p) => q.productId === undefined || p.productId === q.productId).sort(byId),
          q
        )
      ),
    update: (policy) => db.inTransaction((tx) => replace(tx, policies, policy)),
    delete: (id) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          yield* db.lock(tx, lockName(policies, id))
          if (!licenses.inGroup(db.overlayOf(tx, licenses), "policy", id)[Symbol.iterator]().next().done) {
            return yield* Effect.fail(Errors.policyInUse())
          }
          yield* eraseRow(tx, policies, id)
        })
      ),
    licenseCounts: (ids) => read((tx) => ids.map((id) => [...licenses.inGroup(db.overlayOf(tx, licenses), "policy", id)].length)),
    lockLicenses: (policyId) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          const locked: Array<Model.License> = []
          // In id order, as PostgreSQL's `ORDER BY id FOR UPDATE` does, so that no two callers deadlock.
          for (const license of [...licenses.inGroup(db.overlayOf(tx, licenses), "policy", policyId)].sort(byId)) {
            const current = yield* lockRow(tx, licenses, license.id)
            if (current !== undefined && current.policyId === policyId) locked.push(current)
          }
          return locked
        })
      )
  })
}
