/**
 * The store in memory: every port of `@lm/domain` on plain maps, for embedding and tests.
 *
 * NOT DURABLE: everything lives in the process and is gone when it exits; two processes never share it.
 * Use `@lm/storage-pg` to keep data.
 *
 * Semantics (the same as the PostgreSQL store's, checked by the shared storage contract suite):
 * - `Store.transaction` is read committed: a transaction sees its own writes and what others committed; a
 *   failure, defect or interruption rolls back every write made inside. A nested `transaction` joins the
 *   enclosing one as a savepoint. Reads outside a transaction read committed rows directly.
 * - Writing or deleting an existing row takes that row's lock until the transaction ends (as PostgreSQL's
 *   UPDATE does); `LicenseRepository.lockByKey` takes it up front. Called outside a transaction, `lockByKey`
 *   runs as a transaction of its own: it waits for the current holder and returns the latest committed row.
 * - `claimFromPool`, `claimExpired` and `claimUndispatched` skip rows other transactions hold and must run inside a transaction
 *   (outside one they die: a claim that is released at once would hand the same row to two callers).
 * - Ids come from per-table sequences and are never reused. Outbox events get their ids when their
 *   transaction commits, so ids follow commit order.
 * - The event log holds only the newest `activityWindow` entries (default 100,000): older ones are dropped as
 *   new ones commit, so a long-running process keeps a bounded log (`ActivityLog.count` counts what is held).
 *   Likewise the webhook delivery log holds the newest `deliveryWindow` finished deliveries (default 100,000);
 *   pending ones are never dropped.
 * - Violations of constraints that the ports cannot report as typed errors (a duplicate machine
 *   fingerprint, API key hash or signing key id, an update of a missing row, a deadlock) are defects.
 */
import { Analytics, Errors, License, Model, Ports } from "@lm/domain"
import { Context, Effect, Layer } from "effect"
import { Database, type Tx } from "./Database.js"
import type { Row, Table } from "./Table.js"

/** Every port the memory store provides. */
export type Services = Ports.StorePorts

interface SigningKeyRow extends Model.StoredSigningKey {
  readonly id: number
}

type StoredEvent = Model.StoredEvent

/** A subscription and the moment the clock next has a move for it (indexed for the period-end job). */
interface SubscriptionRow extends Model.Subscription {
  readonly dueAt: number | null
}

const subscriptionOf = (row: SubscriptionRow | undefined): Model.Subscription | undefined => {
  if (row === undefined) return undefined
  const { dueAt: _, ...subscription } = row
  return subscription
}

/** Events and activity a transaction wrote, published when it commits. */
interface Pending {
  readonly events: Array<Model.DomainEvent>
  revocationBumps: number
  readonly activity: Array<Model.ActivityEntry>
  /** The hourly counters its event-log entries add. */
  readonly rollup: Array<Analytics.HourlyCount>
}

/** An announced anomaly (the memory form of `lm_anomalies`). */
interface AnomalyRow extends Ports.AnomalyRecord {
  readonly id: number
}

/** A deep copy that nobody can change afterwards: what the store keeps and hands out. */
const frozen = <A>(value: A): A => deepFreeze(structuredClone(value))

const deepFreeze = <A>(value: A): A => {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const inner of Object.values(value)) deepFreeze(inner)
  }
  return value
}

const pageOf = <A>(items: ReadonlyArray<A>, page: Ports.PageRequest): Ports.Page<A> => {
  const start = Math.max(0, (page.page - 1) * page.perPage)
  return { items: items.slice(start, start + Math.max(0, page.perPage)), total: items.length }
}

const byId = (a: Row, b: Row) => a.id - b.id

const notInTransaction = (operation: string) =>
  Effect.die(new Error(`${operation} must run inside Store.transaction: its claim lasts until the transaction ends`))

/** Settings of a memory store. */
export interface Options {
  /** Newest event-log entries held (default {@link defaultActivityWindow}, at least 1,000). */
  readonly activityWindow?: number | undefined
  /** Newest finished (delivered or failed) webhook deliveries held (default {@link defaultDeliveryWindow}, at least 1,000). */
  readonly deliveryWindow?: number | undefined
}

/** The event-log window when none is given: some tens of MB. */
export const defaultActivityWindow = 100_000

/** The finished-delivery window when none is given: the delivery log of a long-running process stays bounded. */
export const defaultDeliveryWindow = 100_000

/** Builds a fresh, empty store and its ports. */
export const make = (options: Options = {}): Context.Context<Services> => {
  const db = new Database()
  const activityWindow = Math.max(1_000, options.activityWindow ?? defaultActivityWindow)
  const deliveryWindow = Math.max(1_000, options.deliveryWindow ?? defaultDeliveryWindow)

  const licenses = db.table<Model.License>({
    name: "license",
    unique: { key: (license) => license.key },
    groups: { pool: (license) => (license.state === "pending" ? license.generatorId : null) }
  })
  const machines = db.table<Model.Machine>({
    name: "machine",
    unique: { fingerprint: (machine) => `${machine.licenseId}\u0000${machine.fingerprint}` },
    groups: {
      license: (machine) => machine.licenseId,
      due: (machine) => (machine.status === "active" && machine.seatDeadline !== null ? 0 : null),
      revoked: (machine) => (machine.status === "revoked" ? 0 : null)
    }
  })
  const generators = db.table<Model.Generator>({ name: "generator", unique: {}, groups: {} })
  const apiKeys = db.table<Model.ApiKey>({ name: "api_key", unique: { hash: (key) => key.consumerKeyHash }, groups: {} })
  const signingKeys = db.table<SigningKeyRow>({ name: "signing_key", unique: { kid: (key) => key.kid }, groups: {} })
  const webhooks = db.table<Model.Webhook>({
    name: "webhook",
    unique: {},
    groups: { active: (webhook) => (webhook.status === "active" ? 0 : null) }
  })
  const deliveries = db.table<Model.WebhookDelivery>({
    name: "webhook_delivery",
    unique: { event: (d) => `${d.webhookId}\u0000${d.eventId}` },
    groups: { webhook: (d) => d.webhookId, pending: (d) => (d.status === "pending" ? 0 : null) }
  })
  const subscriptions = db.table<SubscriptionRow>({
    name: "subscription",
    unique: {},
    groups: { due: (row) => (row.dueAt !== null ? 0 : null), license: (row) => row.licenseId }
  })
  const renewals = db.table<Model.RenewalRecord>({
    name: "subscription_renewal",
    unique: {},
    groups: { subscription: (row) => row.subscriptionId }
  })
  const anomalies = db.table<AnomalyRow>({ name: "anomaly", unique: { kind: (a) => `${a.licenseId}\u0000${a.type}` }, groups: {} })
  const releases = db.table<Model.Release>({
    name: "release",
    unique: { version: (r) => `${r.productId}\u0000${r.version}` },
    groups: { product: (r) => r.productId }
  })
  let componentSeq = 0

  const committedEvents: Array<StoredEvent> = []
  /** Ids of committed events no webhook dispatcher has handled yet, in commit order. */
  const undispatched = new Set<number>()
  let revocationSeq = 0
  /** The event log: the entries from `activityHead` on (the ones before it are gone, and sliced off now and then). */
  let activity: Array<Model.ActivityEntry> = []
  let activityHead = 0
  const activityByLicense = new Map<number, number>()
  /** The hourly counters (rollups) per scope, then scope id, then hour start; retention leaves them. */
  const rollups: Record<Analytics.RollupScope, Map<number, Map<number, { valid: number; invalid: number; refused: number; activations: number }>>> = {
    license: new Map(),
    product: new Map()
  }
  /** The start of each period's `topLicenses` window as last set (every hour counts while unset). */
  const topWindows = new Map<Model.AnalyticsPeriod, number>()
  const addRollup = (row: Analytics.HourlyCount) => {
    let ofId = rollups[row.scope].get(row.scopeId)
    if (ofId === undefined) rollups[row.scope].set(row.scopeId, ofId = new Map())
    const held = ofId.get(row.hour)
    if (held === undefined) {
      ofId.set(row.hour, { valid: row.valid, invalid: row.invalid, refused: row.refused, activations: row.activations })
    } else {
      held.valid += row.valid
      held.invalid += row.invalid
      held.refused += row.refused
      held.activations += row.activations
    }
  }
  const pendingOf = new WeakMap<Tx, Pending>()

  // ---------------------------------------------------------------------------------------------------------
  // Helpers

  /** Runs a read against what the current fiber sees (its transaction's writes included). */
  const read = <A>(f: (tx: Tx | undefined) => A): Effect.Effect<A> => Effect.withFiber((fiber) => Effect.succeed(f(db.readTx(fiber))))

  const lockName = <R extends Row>(table: Table<R>, id: number) => `${table.name}:${id}`

  /** Locks an existing row for the transaction and returns its current version (undefined once deleted). */
  const lockRow = <R extends Row>(tx: Tx, table: Table<R>, id: number): Effect.Effect<R | undefined> =>
    Effect.map(db.lock(tx, lockName(table, id)), () => table.get(db.overlayOf(tx, table), id))

  /** Replaces an existing row under its lock; dies when the row is gone or a unique key is taken. */
  const replace = <R extends Row>(tx: Tx, table: Table<R>, row: R, build: (current: R) => R = () => row): Effect.Effect<R> =>
    Effect.flatMap(lockRow(tx, table, row.id), (current) => {
      if (current === undefined) return Effect.die(new Error(`no ${table.name} with id ${row.id} to update`))
      const next = frozen(build(current))
      return Effect.flatMap(db.putUnique(tx, table, [next]), (written) =>
        written ? Effect.succeed(next) : Effect.die(new Error(`${table.name} ${row.id}: a unique key is already taken`)))
    })

  /** Inserts new rows; dies when a unique key is taken. */
  const insertRows = <R extends Row>(tx: Tx, table: Table<R>, rows: ReadonlyArray<R>): Effect.Effect<ReadonlyArray<R>> =>
    Effect.flatMap(db.putUnique(tx, table, rows), (written) =>
      written ? Effect.succeed(rows) : Effect.die(new Error(`${table.name}: a unique key is already taken`)))

  /** Deletes a row under its lock; answers whether it existed. */
  const eraseRow = <R extends Row>(tx: Tx, table: Table<R>, id: number): Effect.Effect<boolean> =>
    Effect.map(lockRow(tx, table, id), (current) => {
      if (current === undefined) return false
      db.erase(tx, table, id)
      return true
    })

  /** Takes an entry that leaves the event log off the per-license counts. */
  const forgetActivity = (entry: Model.ActivityEntry) => {
    if (entry.licenseId === null) return
    const left = (activityByLicense.get(entry.licenseId) ?? 0) - 1
    if (left > 0) activityByLicense.set(entry.licenseId, left)
    else activityByLicense.delete(entry.licenseId)
  }

  const pending = (tx: Tx): Pending => {
    let p = pendingOf.get(tx)
    if (p === undefined) {
      const created: Pending = { events: [], revocationBumps: 0, activity: [], rollup: [] }
      pendingOf.set(tx, created)
      tx.onCommit.push(() => {
        for (const event of created.events) {
          const id = committedEvents.length + 1
          // The event is frozen already (`append`): only the row around it is new.
          committedEvents.push(Object.freeze({ id, ...event }))
          undispatched.add(id)
        }
        revocationSeq += created.revocationBumps
        for (const entry of created.activity) {
          activity.push(entry)
          if (entry.licenseId !== null) activityByLicense.set(entry.licenseId, (activityByLicense.get(entry.licenseId) ?? 0) + 1)
        }
        for (const row of created.rollup) addRollup(row)
        while (activity.length - activityHead > activityWindow) forgetActivity(activity[activityHead++]!)
        if (activityHead > 1_024 && activityHead * 2 > activity.length) {
          activity = activity.slice(activityHead)
          activityHead = 0
        }
      })
      p = created
    }
    return p
  }

  // ---------------------------------------------------------------------------------------------------------
  // Store

  const store = Ports.Store.of({
    transaction: (effect) => db.transaction(effect),
    ping: Effect.void
  })

  // ---------------------------------------------------------------------------------------------------------
  // Licenses

  const insertLicenses = (drafts: ReadonlyArray<Model.LicenseDraft>) =>
    db.inTransaction((tx) =>
      Effect.suspend(() => {
        const rows = drafts.map((draft) => frozen<Model.License>({ ...draft, id: licenses.nextId(), revision: 1 }))
        return Effect.flatMap(db.putUnique(tx, licenses, rows), (written) => (written ? Effect.succeed(rows) : Effect.fail(Errors.licenseExists())))
      })
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
      if (machine.status === "active" && (machine.seatDeadline === null || machine.seatDeadline > at)) return true
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

  const licenseRepository = Ports.LicenseRepository.of({
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
        return pageOf(matching.sort(licenseOrder(query)), query)
      }),
    countEach: (filters) =>
      read((tx) => {
        const all = [...licenses.all(db.overlayOf(tx, licenses))]
        return filters.map((filter) => all.filter(licenseMatches(tx, filter)).length)
      }),
    update: (license) => db.inTransaction((tx) => replace(tx, licenses, license)),
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

  // ---------------------------------------------------------------------------------------------------------
  // Machines

  const withComponentIds = (components: ReadonlyArray<Model.ComponentDraft>) =>
    components.map((component) => ({ id: ++componentSeq, kind: component.kind, fingerprint: component.fingerprint, name: component.name }))

  const machinesOf = (tx: Tx | undefined, licenseId: number) => machines.inGroup(db.overlayOf(tx, machines), "license", licenseId)

  const insertMachines = (drafts: ReadonlyArray<Model.MachineDraft>) =>
    db.inTransaction((tx) =>
      Effect.suspend(() => {
        const orphan = drafts.find((draft) => licenses.get(db.overlayOf(tx, licenses), draft.licenseId) === undefined)
        if (orphan !== undefined) return Effect.die(new Error(`no license with id ${orphan.licenseId} for the machine`))
        const rows = drafts.map((draft) => frozen<Model.Machine>({ ...draft, id: machines.nextId(), components: withComponentIds(draft.components) }))
        return insertRows(tx, machines, rows)
      })
    )

  const updateMachines = (list: ReadonlyArray<Model.Machine>) =>
    list.length === 0 ? Effect.void : db.inTransaction((tx) =>
      Effect.forEach(list, (machine) => replace(tx, machines, machine, (current) => ({ ...machine, components: current.components })), {
        discard: true
      })
    )

  const machineRepository = Ports.MachineRepository.of({
    insert: (draft: Model.MachineDraft) => Effect.map(insertMachines([draft]), (rows) => rows[0]!),
    writeSeatChanges: ({ events, inserts, updates }) =>
      db.inTransaction(() =>
        Effect.gen(function*() {
          const inserted = inserts.length === 0 ? [] : yield* insertMachines(inserts)
          yield* updateMachines(updates)
          yield* eventOutbox.append(
            events.map(({ event, insertIndex }) => (insertIndex === undefined ? event : { ...event, machineId: inserted[insertIndex]!.id }))
          )
          return inserted
        })
      ),
    listForSeatChanges: (named) =>
      read((tx) => {
        const out = new Map<number, Model.Machine>()
        for (const licenseId of new Set(named.map((n) => n.licenseId))) {
          for (const machine of machinesOf(tx, licenseId)) if (machine.status === "active") out.set(machine.id, machine)
        }
        for (const { licenseId, fingerprint } of named) {
          const record = machines.findUnique(db.overlayOf(tx, machines), "fingerprint", `${licenseId}\u0000${fingerprint}`)
          if (record !== undefined) out.set(record.id, record)
        }
        return [...out.values()].sort(byId)
      }),
    update: (machine, components) =>
      db.inTransaction((tx) =>
        replace(tx, machines, machine, (current) => ({
          ...machine,
          components: components === undefined ? current.components : withComponentIds(components)
        }))
      ),
    findById: (id) => read((tx) => machines.get(db.overlayOf(tx, machines), id)),
    findByFingerprint: (licenseId, fingerprint) =>
      read((tx) => machines.findUnique(db.overlayOf(tx, machines), "fingerprint", `${licenseId}\u0000${fingerprint}`)),
    listActive: (licenseId) => read((tx) => [...machinesOf(tx, licenseId)].filter((m) => m.status === "active")),
    listActiveOf: (licenseIds) =>
      read((tx) => licenseIds.flatMap((id) => [...machinesOf(tx, id)].filter((m) => m.status === "active")).sort(byId)),
    listForValidation: (licenseId, fingerprint) =>
      read((tx) => [...machinesOf(tx, licenseId)].filter((m) => m.status === "active" || m.fingerprint === fingerprint)),
    list: (licenseId, query: Ports.MachineQuery) =>
      read((tx) => pageOf([...machinesOf(tx, licenseId)].filter((m) => query.status === undefined || m.status === query.status), query)),
    claimExpired: (now, limit) =>
      Effect.withFiber((fiber) => {
        const tx = db.readTx(fiber)
        if (tx === undefined) return notInTransaction("claimExpired")
        const due = [...machines.inGroup(db.overlayOf(tx, machines), "due", 0)]
          .filter((m) => m.seatDeadline !== null && m.seatDeadline <= now && !db.lockedByOther(tx, lockName(machines, m.id)))
          .sort((a, b) => a.seatDeadline! - b.seatDeadline! || a.id - b.id)
          .slice(0, Math.max(0, limit))
        for (const machine of due) db.tryLock(tx, lockName(machines, machine.id))
        return Effect.succeed(due)
      }),
    listRevoked: read((tx) => [...machines.inGroup(db.overlayOf(tx, machines), "revoked", 0)].map((m) => ({ id: m.id, fingerprint: m.fingerprint })))
  })

  // ---------------------------------------------------------------------------------------------------------
  // Generators, API keys, signing keys

  const generatorRepository = Ports.GeneratorRepository.of({
    insert: (draft: Model.GeneratorDraft) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<Model.Generator>({ ...draft, id: generators.nextId() })
          return Effect.map(insertRows(tx, generators, [row]), () => row)
        })
      ),
    findById: (id) => read((tx) => generators.get(db.overlayOf(tx, generators), id)),
    list: (page) => read((tx) => pageOf([...generators.all(db.overlayOf(tx, generators))].sort(byId), page)),
    update: (generator) => db.inTransaction((tx) => replace(tx, generators, generator)),
    delete: (id) => db.inTransaction((tx) => Effect.asVoid(eraseRow(tx, generators, id)))
  })

  const apiKeyRepository = Ports.ApiKeyRepository.of({
    insert: (draft: Model.ApiKeyDraft) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<Model.ApiKey>({ ...draft, id: apiKeys.nextId() })
          return Effect.map(insertRows(tx, apiKeys, [row]), () => row)
        })
      ),
    findByConsumerKeyHash: (hash) => read((tx) => apiKeys.findUnique(db.overlayOf(tx, apiKeys), "hash", hash)),
    list: (page) => read((tx) => pageOf([...apiKeys.all(db.overlayOf(tx, apiKeys))].sort(byId), page)),
    delete: (id) => db.inTransaction((tx) => eraseRow(tx, apiKeys, id)),
    count: read((tx) => apiKeys.count(db.overlayOf(tx, apiKeys))),
    touch: (id, at) =>
      db.inTransaction((tx) =>
        Effect.flatMap(lockRow(tx, apiKeys, id), (current) =>
          current === undefined ? Effect.void : Effect.asVoid(replace(tx, apiKeys, { ...current, lastAccessAt: at })))
      )
  })

  const signingKeyRepository = Ports.SigningKeyRepository.of({
    list: read((tx) =>
      [...signingKeys.all(db.overlayOf(tx, signingKeys))]
        .sort((a, b) => a.createdAt - b.createdAt || a.id - b.id)
        .map(({ id: _, ...key }) => key)
    ),
    insert: (key) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          if (key.current) {
            const currents = [...signingKeys.all(db.overlayOf(tx, signingKeys))].filter((k) => k.current)
            for (const previous of currents) yield* replace(tx, signingKeys, previous, (latest) => ({ ...latest, current: false }))
          }
          const { kid, seed, publicKey, current, createdAt } = key
          yield* insertRows(tx, signingKeys, [frozen({ id: signingKeys.nextId(), kid, seed, publicKey, current, createdAt })])
        })
      ),
    replaceSeed: (kid, seed) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = [...signingKeys.all(db.overlayOf(tx, signingKeys))].find((k) => k.kid === kid)
          return row === undefined ? Effect.void : Effect.asVoid(replace(tx, signingKeys, row, (latest) => ({ ...latest, seed })))
        })
      ),
    retire: (kid) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = [...signingKeys.all(db.overlayOf(tx, signingKeys))].find((k) => k.kid === kid && !k.current)
          return row === undefined ? Effect.succeed(false) : eraseRow(tx, signingKeys, row.id)
        })
      )
  })

  // ---------------------------------------------------------------------------------------------------------
  // Outbox and event log

  const eventOutbox = Ports.EventOutbox.of({
    append: (events) =>
      db.inTransaction((tx) =>
        Effect.sync(() => {
          if (events.length === 0) return
          const p = pending(tx)
          const [length, bumps] = [p.events.length, p.revocationBumps]
          for (const event of events) p.events.push(frozen(event))
          if (Model.affectsRevocationList(events)) p.revocationBumps++
          db.record(tx, () => {
            p.events.length = length
            p.revocationBumps = bumps
          })
        })
      ),
    readAfter: (afterId, limit) =>
      read((tx) => {
        const from = Math.max(0, Math.floor(afterId))
        const out: Array<StoredEvent> = committedEvents.slice(from, from + Math.max(0, limit))
        const own = tx === undefined ? undefined : pendingOf.get(tx)
        if (own !== undefined) {
          // The transaction's own events, with the ids they would get if it committed now.
          own.events.forEach((event, i) => {
            const id = committedEvents.length + 1 + i
            if (id > afterId && out.length < limit) out.push({ id, ...event })
          })
        }
        return out
      }),
    findById: (id) => Effect.sync(() => (Number.isInteger(id) && id >= 1 ? committedEvents[id - 1] : undefined)),
    findByIds: (ids) =>
      Effect.sync(() => ids.flatMap((id) => (Number.isInteger(id) && id >= 1 && committedEvents[id - 1] !== undefined ? [committedEvents[id - 1]!] : []))),
    revocationSeq: read((tx) => revocationSeq + (tx === undefined ? 0 : pendingOf.get(tx)?.revocationBumps ?? 0))
  })

  // ---------------------------------------------------------------------------------------------------------
  // Webhooks and their deliveries

  const webhookRepository = Ports.WebhookRepository.of({
    insert: (draft) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<Model.Webhook>({ ...draft, id: webhooks.nextId() })
          return Effect.map(insertRows(tx, webhooks, [row]), () => row)
        })
      ),
    findById: (id) => read((tx) => webhooks.get(db.overlayOf(tx, webhooks), id)),
    list: (page) => read((tx) => pageOf([...webhooks.all(db.overlayOf(tx, webhooks))].sort(byId), page)),
    listActive: read((tx) => [...webhooks.inGroup(db.overlayOf(tx, webhooks), "active", 0)]),
    lockById: (id) => db.inTransaction((tx) => lockRow(tx, webhooks, id)),
    update: (webhook) => db.inTransaction((tx) => replace(tx, webhooks, webhook)),
    delete: (id) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          if (!(yield* eraseRow(tx, webhooks, id))) return false
          for (const delivery of [...deliveries.inGroup(db.overlayOf(tx, deliveries), "webhook", id)]) {
            yield* eraseRow(tx, deliveries, delivery.id)
          }
          return true
        })
      )
  })

  /**
   * Ids of deliveries in the order they finished, oldest first from `finishedHead`: past `deliveryWindow` the
   * oldest are erased (the delivery log keeps the newest; a pending one, redelivered meanwhile, is kept, as is a
   * row another transaction holds).
   */
  let finishedDeliveries: Array<number> = []
  let finishedHead = 0
  const forgetFinishedDeliveries = (tx: Tx) => {
    let head = finishedHead
    while (finishedDeliveries.length - head > deliveryWindow) {
      const id = finishedDeliveries[head++]!
      const row = deliveries.get(db.overlayOf(tx, deliveries), id)
      if (row !== undefined && row.status !== "pending" && db.tryLock(tx, lockName(deliveries, id))) db.erase(tx, deliveries, id)
    }
    // Moved on when the erasures commit: after a rollback the same ones are tried again.
    tx.onCommit.push(() => {
      finishedHead = Math.max(finishedHead, head)
      if (finishedHead > 1_024 && finishedHead * 2 > finishedDeliveries.length) {
        finishedDeliveries = finishedDeliveries.slice(finishedHead)
        finishedHead = 0
      }
    })
  }

  const deliveryQueue = Ports.WebhookDeliveryQueue.of({
    claimUndispatched: (limit) =>
      Effect.withFiber((fiber) => {
        const tx = db.readTx(fiber)
        if (tx === undefined) return notInTransaction("claimUndispatched")
        const claimed: Array<StoredEvent> = []
        for (const id of undispatched) {
          if (claimed.length >= limit) break
          if (db.tryLock(tx, `event:${id}`)) claimed.push(committedEvents[id - 1]!)
        }
        return Effect.succeed(claimed)
      }),
    dispatch: (eventIds, drafts) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          const rows = drafts.map((draft) => frozen<Model.WebhookDelivery>({ ...draft, id: deliveries.nextId() }))
          yield* insertRows(tx, deliveries, rows)
          tx.onCommit.push(() => {
            for (const id of eventIds) undispatched.delete(id)
          })
        })
      ),
    claimDue: (now, lockedUntil, limit) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          // The first `limit` due ones in id order (lazily: the pending group may be long), answered in due order.
          const due: Array<Model.WebhookDelivery> = []
          for (const d of deliveries.inGroup(db.overlayOf(tx, deliveries), "pending", 0)) {
            if (due.length >= limit) break
            if (
              d.nextAttemptAt !== null && d.nextAttemptAt <= now && (d.lockedUntil === null || d.lockedUntil <= now) &&
              webhooks.get(db.overlayOf(tx, webhooks), d.webhookId)?.status === "active" &&
              !db.lockedByOther(tx, lockName(deliveries, d.id))
            ) due.push(d)
          }
          due.sort((a, b) => a.nextAttemptAt! - b.nextAttemptAt! || a.id - b.id)
          const claimed: Array<Model.WebhookDelivery> = []
          for (const d of due) claimed.push(yield* replace(tx, deliveries, d, (latest) => ({ ...latest, lockedUntil })))
          return claimed
        })
      ),
    // A delivery deleted with its webhook while an attempt was in flight stays deleted (as an UPDATE of no row).
    update: (delivery) =>
      db.inTransaction((tx) =>
        Effect.flatMap(lockRow(tx, deliveries, delivery.id), (current) =>
          current === undefined ? Effect.succeed(delivery) : replace(tx, deliveries, delivery))
      ),
    recordAttempts: (attempted) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          for (const delivery of attempted) {
            const current = yield* lockRow(tx, deliveries, delivery.id)
            if (current !== undefined) yield* replace(tx, deliveries, delivery)
          }
          // Listed at once (after a rollback an entry's row is still pending, and is passed over when trimmed).
          for (const d of attempted) if (d.status !== "pending") finishedDeliveries.push(d.id)
          forgetFinishedDeliveries(tx)
        })
      ),
    findById: (webhookId, id) =>
      read((tx) => {
        const found = deliveries.get(db.overlayOf(tx, deliveries), id)
        return found?.webhookId === webhookId ? found : undefined
      }),
    list: (webhookId, page) =>
      read((tx) => pageOf([...deliveries.inGroup(db.overlayOf(tx, deliveries), "webhook", webhookId)].sort((a, b) => b.id - a.id), page))
  })

  // ---------------------------------------------------------------------------------------------------------
  // Subscriptions and their renewal records

  const subscriptionRepository = Ports.SubscriptionRepository.of({
    insert: (draft, dueAt) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<SubscriptionRow>({ ...draft, id: subscriptions.nextId(), revision: 1, dueAt })
          return Effect.map(insertRows(tx, subscriptions, [row]), () => subscriptionOf(row)!)
        })
      ),
    findById: (id) => read((tx) => subscriptionOf(subscriptions.get(db.overlayOf(tx, subscriptions), id))),
    lockById: (id) =>
      db.inTransaction((tx) => Effect.map(lockRow(tx, subscriptions, id), subscriptionOf)),
    list: (query) =>
      read((tx) =>
        pageOf(
          [...subscriptions.all(db.overlayOf(tx, subscriptions))]
            .filter((s) =>
              (query.status === undefined || s.status === query.status) &&
              (query.userId === undefined || s.userId === query.userId) &&
              (query.productId === undefined || s.productId === query.productId)
            )
            .sort(byId)
            .map((row) => subscriptionOf(row)!),
          query
        )
      ),
    update: (subscription, dueAt) =>
      db.inTransaction((tx) => Effect.map(replace(tx, subscriptions, { ...subscription, dueAt }), (row) => subscriptionOf(row)!)),
    totals: read((tx) => {
      const groups = new Map<string, { -readonly [K in keyof Ports.SubscriptionTotal]: Ports.SubscriptionTotal[K] }>()
      for (const s of subscriptions.all(db.overlayOf(tx, subscriptions))) {
        const key = `${s.status}\u0000${s.currency}\u0000${s.billingPeriod}\u0000${s.billingInterval}`
        const group = groups.get(key) ?? { status: s.status, currency: s.currency, billingPeriod: s.billingPeriod, billingInterval: s.billingInterval, count: 0, amount: 0n }
        group.count += 1
        group.amount += BigInt(s.amount)
        groups.set(key, group)
      }
      return [...groups.values()]
    }),
    claimDue: (now, limit) =>
      Effect.withFiber((fiber) => {
        const tx = db.readTx(fiber)
        if (tx === undefined) return notInTransaction("claimDue")
        const due = [...subscriptions.inGroup(db.overlayOf(tx, subscriptions), "due", 0)]
          .filter((s) => s.dueAt !== null && s.dueAt <= now && !db.lockedByOther(tx, lockName(subscriptions, s.id)))
          .sort((a, b) => a.dueAt! - b.dueAt! || a.id - b.id)
          .slice(0, Math.max(0, limit))
        return Effect.forEach(due, (s) => lockRow(tx, subscriptions, s.id)).pipe(
          Effect.map((rows) => rows.flatMap((row) => (row === undefined ? [] : [subscriptionOf(row)!])))
        )
      }),
    insertRenewal: (subscriptionId, draft) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<Model.RenewalRecord>({ ...draft, id: renewals.nextId(), subscriptionId })
          return Effect.map(insertRows(tx, renewals, [row]), () => row)
        })
      ),
    listRenewals: (subscriptionId, page) =>
      read((tx) => pageOf([...renewals.inGroup(db.overlayOf(tx, renewals), "subscription", subscriptionId)].sort(byId), page))
  })

  const activityLog = Ports.ActivityLog.of({
    record: (entries) =>
      db.inTransaction((tx) =>
        Effect.sync(() => {
          if (entries.length === 0) return
          const p = pending(tx)
          const length = p.activity.length
          const rollupLength = p.rollup.length
          for (const entry of entries) p.activity.push(frozen(entry))
          p.rollup.push(...Analytics.hourlyCountsOf(entries))
          db.record(tx, () => {
            p.activity.length = length
            p.rollup.length = rollupLength
          })
        })
      ),
    count: (filter) =>
      read((tx) => {
        const own = tx === undefined ? [] : pendingOf.get(tx)?.activity ?? []
        if (filter.licenseId === undefined) return activity.length - activityHead + own.length
        const licenseId = filter.licenseId
        return (activityByLicense.get(licenseId) ?? 0) + own.filter((entry) => entry.licenseId === licenseId).length
      }),
    // Deletes committed entries at once: retention runs outside transactions (no other transaction holds them).
    prune: (olderThan, limit) =>
      Effect.sync(() => {
        const held = activity.slice(activityHead)
        let old = held.filter((entry) => entry.at < olderThan)
        if (old.length === 0 || limit < 1) return 0
        if (old.length > limit) old = old.sort((a, b) => a.at - b.at).slice(0, limit)
        const gone = new Set(old)
        for (const entry of old) forgetActivity(entry)
        activity = held.filter((entry) => !gone.has(entry))
        activityHead = 0
        return old.length
      })
  })

  const activeAt = (machine: Model.Machine, at: number) => machine.status === "active" && (machine.seatDeadline === null || machine.seatDeadline > at)

  const analyticsRepository = Ports.AnalyticsRepository.of({
    hourly: (q) =>
      Effect.sync(() => {
        const sums = new Map<number, { hour: number; valid: number; invalid: number; refused: number; activations: number }>()
        const ids = q.scopeId === undefined ? [...rollups[q.scope].values()] : [rollups[q.scope].get(q.scopeId) ?? new Map()]
        for (const ofId of ids) {
          for (const [hour, c] of ofId) {
            if (hour < q.from || hour >= q.to) continue
            const sum = sums.get(hour) ?? { hour, valid: 0, invalid: 0, refused: 0, activations: 0 }
            sums.set(hour, { hour, valid: sum.valid + c.valid, invalid: sum.invalid + c.invalid, refused: sum.refused + c.refused, activations: sum.activations + c.activations })
          }
        }
        return [...sums.values()].sort((a, b) => a.hour - b.hour)
      }),
    // Summed from the hourly counters on each call: the window's start is all this store keeps of it.
    topLicenses: (period, limit) =>
      Effect.sync(() => {
        const from = topWindows.get(period) ?? -Infinity
        const totals: Array<{ licenseId: number; validations: number }> = []
        for (const [licenseId, ofId] of rollups.license) {
          if (licenseId === Analytics.noLicense) continue
          let validations = 0
          for (const [hour, c] of ofId) if (hour >= from) validations += c.valid + c.invalid
          if (validations > 0) totals.push({ licenseId, validations })
        }
        return totals.sort((a, b) => b.validations - a.validations || a.licenseId - b.licenseId).slice(0, Math.max(0, limit))
      }),
    moveTopWindows: (windows) =>
      Effect.sync(() => {
        for (const w of windows) topWindows.set(w.period, w.from)
      }),
    busyHours: (q) =>
      Effect.sync(() => {
        const out: Array<{ licenseId: number; hour: number; count: number }> = []
        for (const [licenseId, ofId] of rollups.license) {
          if (licenseId === Analytics.noLicense) continue
          for (const [hour, c] of ofId) {
            const count = q.counter === "refused" ? c.refused : c.valid + c.invalid
            if (hour >= q.from && count >= q.atLeast) out.push({ licenseId, hour, count })
          }
        }
        return out.sort((a, b) => a.licenseId - b.licenseId || a.hour - b.hour)
      }),
    distinctPerLicense: (q) =>
      Effect.sync(() => {
        const seen = new Map<number, Set<string>>()
        for (let i = activityHead; i < activity.length; i++) {
          const e = activity[i]!
          if (e.licenseId === null || e.at < q.since) continue
          if (q.kind !== undefined && e.kind !== q.kind) continue
          if (q.result !== undefined && e.result !== q.result) continue
          const value = q.column === "fingerprint" ? e.fingerprint : e.ipAddress
          if (value === null) continue
          let values = seen.get(e.licenseId)
          if (values === undefined) seen.set(e.licenseId, values = new Set())
          values.add(value)
        }
        return [...seen].filter(([, v]) => v.size >= q.atLeast).map(([licenseId, v]) => ({ licenseId, count: v.size })).sort((a, b) => a.licenseId - b.licenseId)
      }),
    seats: (states, at) =>
      read((tx) => {
        let activeMachines = 0
        let totalSeats = 0
        for (const license of licenses.all(db.overlayOf(tx, licenses))) {
          if (license.maxActivations === null || !states.includes(license.state)) continue
          totalSeats += license.maxActivations
          for (const machine of machines.inGroup(db.overlayOf(tx, machines), "license", license.id)) if (activeAt(machine, at)) activeMachines++
        }
        return { activeMachines, totalSeats }
      }),
    appVersions: (at) =>
      read((tx) => {
        const counts = new Map<string | null, number>()
        for (const machine of machines.all(db.overlayOf(tx, machines))) {
          if (activeAt(machine, at)) counts.set(machine.appVersion, (counts.get(machine.appVersion) ?? 0) + 1)
        }
        return [...counts].map(([appVersion, n]) => ({ appVersion, machines: n }))
          .sort((a, b) => b.machines - a.machines || String(a.appVersion).localeCompare(String(b.appVersion)))
      }),
    recordAnomalies: (found, since) =>
      db.inTransaction((tx) =>
        Effect.gen(function*() {
          const fresh: Array<Ports.AnomalyRecord> = []
          for (const a of found) {
            const held = anomalies.findUnique(db.overlayOf(tx, anomalies), "kind", `${a.licenseId}\u0000${a.type}`)
            if (held === undefined) {
              if (yield* db.putUnique(tx, anomalies, [frozen({ ...a, id: anomalies.nextId() })])) fresh.push(a)
            } else if (held.detectedAt < since) {
              yield* replace(tx, anomalies, { ...held, detectedAt: a.detectedAt })
              fresh.push(a)
            }
          }
          return fresh
        })
      ),
    anomaliesSince: (since) =>
      read((tx) =>
        [...anomalies.all(db.overlayOf(tx, anomalies))]
          .filter((a) => a.detectedAt >= since)
          .map(({ detectedAt, licenseId, type }) => ({ licenseId, type, detectedAt }))
      )
  })

  // ---------------------------------------------------------------------------------------------------------
  // Releases

  /** Newest first: `versionKey` descending (byte order: its characters are ASCII), then id descending. */
  const newestFirst = (a: Model.Release, b: Model.Release) =>
    a.versionKey === b.versionKey ? b.id - a.id : a.versionKey < b.versionKey ? 1 : -1

  const releaseRepository = Ports.ReleaseRepository.of({
    insert: (draft) =>
      db.inTransaction((tx) =>
        Effect.suspend(() => {
          const row = frozen<Model.Release>({ ...draft, id: releases.nextId() })
          return Effect.flatMap(db.putUnique(tx, releases, [row]), (written) => (written ? Effect.succeed(row) : Effect.fail(Errors.releaseExists())))
        })
      ),
    findById: (id) => read((tx) => releases.get(db.overlayOf(tx, releases), id)),
    findByVersion: (productId, version) => read((tx) => releases.findUnique(db.overlayOf(tx, releases), "version", `${productId}\u0000${version}`)),
    list: (q) =>
      read((tx) => {
        const overlay = db.overlayOf(tx, releases)
        const rows = q.productId === undefined ? [...releases.all(overlay)] : [...releases.inGroup(overlay, "product", q.productId)]
        const channels = q.channels === undefined ? undefined : new Set(q.channels)
        return pageOf(rows.filter((r) => channels === undefined || channels.has(r.channel)).sort(newestFirst), q)
      })
  })

  return Context.make(Ports.Store, store).pipe(
    Context.add(Ports.AnalyticsRepository, analyticsRepository),
    Context.add(Ports.LicenseRepository, licenseRepository),
    Context.add(Ports.MachineRepository, machineRepository),
    Context.add(Ports.GeneratorRepository, generatorRepository),
    Context.add(Ports.ApiKeyRepository, apiKeyRepository),
    Context.add(Ports.SigningKeyRepository, signingKeyRepository),
    Context.add(Ports.EventOutbox, eventOutbox),
    Context.add(Ports.ActivityLog, activityLog),
    Context.add(Ports.WebhookRepository, webhookRepository),
    Context.add(Ports.WebhookDeliveryQueue, deliveryQueue),
    Context.add(Ports.SubscriptionRepository, subscriptionRepository),
    Context.add(Ports.ReleaseRepository, releaseRepository)
  )
}

/**
 * Every port on a fresh, empty store in memory. NOT DURABLE: the data lives as long as the layer. Each build
 * of the layer is a separate store (use `Layer.fresh` to force one where layers are shared).
 */
export const layer: Layer.Layer<Services> = Layer.syncContext(() => make())

/** {@link layer} with settings. */
export const layerWith = (options: Options): Layer.Layer<Services> => Layer.syncContext(() => make(options))
