/**
 * The domain's `LicenseRepository` in memory. A license's delete takes its machines and subscriptions (with their
 * renewal records) with it, as `ON DELETE CASCADE` does on PostgreSQL.
 */
import { Errors, License, Machine, type Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import type { Tx } from "./Database.js"
import { byId, frozen, notInTransaction, pageOf, type Tables } from "./Tables.js"

export const make = (t: Tables): Ports.LicenseRepository["Service"] => {
  const { db, eraseRow, licenses, lockName, lockRow, machines, policies, read, renewals, replace, subscriptions } = t

  /**
   * A license that comes to refer to a policy takes the policy's row lock until its transaction ends (the memory
   * form of PostgreSQL's foreign-key check), so that a delete of the policy waits for it and then sees it.
   */
  const referToPolicies = (tx: Tx, policyIds: ReadonlyArray<number | null>) =>
    Effect.forEach(new Set(policyIds.filter((id) => id !== null)), (id) => db.lock(tx, lockName(policies, id)), { discard: true })

  const insertLicenses = (drafts: ReadonlyArray<Model.LicenseDraft>) =>
    db.inTransaction((tx) =>
      Effect.andThen(
        referToPolicies(tx, drafts.map((draft) => draft.policyId)),
        Effect.suspend(() => {
          const rows = drafts.map((draft) => frozen<Model.License>({ ...draft, id: licenses.nextId(), revision: 1 }))
          return Effect.flatMap(db.putUnique(tx, licenses, rows), (written) => (written ? Effect.succeed(rows) : Effect.fail(Errors.licenseExists())))
        })
      )
    )

  const deleteLicense = (tx: Tx, id: number) =>
    Effect.gen(function*() {
      const license = yield* lockRow(tx, licenses, id)
      if (license === undefined) return false
      const owned = [...machines.inGroup(db.overlayOf(tx, machines), "license", id)]
      for (const machine of owned) yield* eraseRow(tx, machines, machine.id)
      // a subscription and its renewal records go with its license (as ON DELETE CASCADE does on PostgreSQL)
      for (const subscription of [...subscriptions.inGroup(db.overlayOf(tx, subscriptions), "license", id)]) {
        for (const renewal of [...renewals.inGroup(db.overlayOf(tx, renewals), "subscription", subscription.id)]) {
          yield* eraseRow(tx, renewals, renewal.id)
        }
        yield* eraseRow(tx, subscriptions, subscription.id)
      }
      db.erase(tx, licenses, id)
      return true
    })

  const seatHolderAt = (tx: Tx | undefined, licenseId: number, at: number) => {
    for (const machine of machines.inGroup(db.overlayOf(tx, machines), "license", licenseId)) {
      if (Machine.holdsSeatByDeadline(machine, at)) return true
    }
    return false
  }

  const licenseMatches = (tx: Tx | undefined, q: Ports.LicenseFilter) => (license: Model.License): boolean => {
    if (q.states !== undefined && !q.states.includes(license.state)) return false
    if (q.productId !== undefined && license.productId !== q.productId) return false
    if (q.orderId !== undefined && license.orderId !== q.orderId) return false
    if (q.userId !== undefined && license.userId !== q.userId) return false
    if (q.generatorId !== undefined && license.generatorId !== q.generatorId) return false
    if (q.keyPrefix !== undefined && !license.key.startsWith(q.keyPrefix)) return false
    if (q.idAfter !== undefined && !(license.id > q.idAfter)) return false
    if (q.expiresBefore !== undefined && (license.expiresAt === null || !(license.expiresAt < q.expiresBefore))) return false
    if (q.expiresAfter !== undefined && (license.expiresAt === null || !(license.expiresAt > q.expiresAfter))) return false
    if (q.expiredAt !== undefined) {
      const end = License.expiryWithGrace(license)
      if ((end !== null && end < q.expiredAt.at) !== q.expiredAt.value) return false
    }
    if (q.hasSeatHolderAt !== undefined && seatHolderAt(tx, license.id, q.hasSeatHolderAt.at) !== q.hasSeatHolderAt.value) return false
    return true
  }

  /** Ordering of `list`: the chosen column (a missing expiry sorts as the latest), then the id. */
  const licenseOrder = (q: Ports.LicenseQuery) => {
    const direction = q.order === "asc" ? 1 : -1
    const column = (license: Model.License): number => {
      switch (q.orderBy) {
        case "id":
          return license.id
        case "created_at":
          return license.createdAt
        case "expires_at":
          return license.expiresAt ?? Number.POSITIVE_INFINITY
      }
    }
    return (a: Model.License, b: Model.License) => {
      const ca = column(a)
      const cb = column(b)
      return direction * (ca === cb ? a.id - b.id : ca < cb ? -1 : 1)
    }
  }


  const lockLicenseWhere = (find: (tx: Tx) => Model.License | undefined, still: (license: Model.License) => boolean) =>
    db.inTransaction((tx) =>
      Effect.suspend(() => {
        const found = find(tx)
        if (found === undefined) return Effect.succeed(undefined)
        return Effect.map(lockRow(tx, licenses, found.id), (current) => (current !== undefined && still(current) ? current : undefined))
      })
    )

  return Ports.LicenseRepository.of({
    lockByKey: (key) =>
      lockLicenseWhere((tx) => licenses.findUnique(db.overlayOf(tx, licenses), "key", key), (license) => license.key === key),
    lockById: (id) => lockLicenseWhere((tx) => licenses.get(db.overlayOf(tx, licenses), id), () => true),
    lockByKeys: (keys) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          const found = [...new Set(keys)]
            .map((key) => licenses.findUnique(db.overlayOf(tx, licenses), "key", key))
            .filter((license) => license !== undefined)
            .sort(byId)
          const locked: Array<Model.License> = []
          // In id order, as PostgreSQL's `ORDER BY id FOR UPDATE` does, so that no two callers deadlock.
          for (const license of found) {
            const current = yield* lockRow(tx, licenses, license.id)
            if (current !== undefined && current.key === license.key) locked.push(current)
          }
          return locked
        })
      ),
    insert: (draft) => Effect.map(insertLicenses([draft]), (rows) => rows[0]!),
    insertMany: insertLicenses,
    findByKey: (key) => read((tx) => licenses.findUnique(db.overlayOf(tx, licenses), "key", key)),
    findById: (id) => read((tx) => licenses.get(db.overlayOf(tx, licenses), id)),
    list: (query) =>
      read((tx) => {
        const matching = [...licenses.all(db.overlayOf(tx, licenses))].filter(licenseMatches(tx, query))
        const page = pageOf(matching.sort(licenseOrder(query)), query)
        return query.withTotal === false ? { ...page, total: 0 } : page
      }),
    countEach: (filters) =>
      read((tx) => {
        const all = [...licenses.all(db.overlayOf(tx, licenses))]
        return filters.map((filter) => all.filter(licenseMatches(tx, filter)).length)
      }),
    update: (license) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          const current = yield* lockRow(tx, licenses, license.id)
          if (current !== undefined && current.policyId !== license.policyId) yield* referToPolicies(tx, [license.policyId])
          return yield* replace(tx, licenses, license)
        })
      ),
    delete: (id) => db.inTransaction((tx) => Effect.asVoid(deleteLicense(tx, id))),
    claimFromPool: (generatorId) =>
      Effect.withFiber((fiber) => {
        const tx = db.readTx(fiber)
        if (tx === undefined) return notInTransaction("claimFromPool")
        for (const license of licenses.inGroup(db.overlayOf(tx, licenses), "pool", generatorId)) {
          if (db.tryLock(tx, lockName(licenses, license.id))) return Effect.succeed(license)
        }
        return Effect.succeed(undefined)
      }),
    poolSize: (generatorId) =>
      read((tx) => {
        let n = 0
        for (const _ of licenses.inGroup(db.overlayOf(tx, licenses), "pool", generatorId)) n++
        return n
      }),
    deletePool: (generatorId) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          const pool = [...licenses.inGroup(db.overlayOf(tx, licenses), "pool", generatorId)]
          let deleted = 0
          for (const candidate of pool) {
            // Re-check under the lock: a transaction that held it may have issued the key meanwhile.
            const current = yield* lockRow(tx, licenses, candidate.id)
            if (current === undefined || current.state !== "pending" || current.generatorId !== generatorId) continue
            if (yield* deleteLicense(tx, current.id)) deleted++
          }
          return deleted
        })
      ),
    keysInStates: (states: ReadonlyArray<Model.LicenseState>) =>
      read((tx) => [...licenses.all(db.overlayOf(tx, licenses))].filter((l) => states.includes(l.state)).sort(byId).map((l) => l.key))
  })
}
