/**
 * The memory store's tables on one `Database`, and the row operations its port files share: reads of what the
 * current fiber sees, row locks, replacing, inserting and erasing rows. Each port's file (`licenses.ts`,
 * `machines.ts`, ...) builds its port on these; `MemoryStore.ts` composes them.
 */
import type { Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import type { Database, Tx } from "./Database.js"
import type { Row, Table } from "./Table.js"

/** A signing key as its table holds it. */
export interface SigningKeyRow extends Model.StoredSigningKey {
  readonly id: number
}

/** A subscription and the moment the clock next has a move for it (indexed for the period-end job). */
export interface SubscriptionRow extends Model.Subscription {
  readonly dueAt: number | null
}

/** A consumer key an administrator deleted (the memory form of `lm_deleted_api_keys`). */
export interface DeletedApiKeyRow {
  readonly id: number
  readonly consumerKeyHash: string
  readonly deletedAt: number
}

/** An announced anomaly (the memory form of `lm_anomalies`). */
export interface AnomalyRow extends Ports.AnomalyRecord {
  readonly id: number
}

/** A deep copy that nobody can change afterwards: what the store keeps and hands out. */
export const frozen = <A>(value: A): A => deepFreeze(structuredClone(value))

const deepFreeze = <A>(value: A): A => {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const inner of Object.values(value)) deepFreeze(inner)
  }
  return value
}

export const pageOf = <A>(items: ReadonlyArray<A>, page: Ports.PageRequest): Ports.Page<A> => {
  const start = Math.max(0, (page.page - 1) * page.perPage)
  return { items: items.slice(start, start + Math.max(0, page.perPage)), total: items.length }
}

export const byId = (a: Row, b: Row) => a.id - b.id

export const notInTransaction = (operation: string) =>
  Effect.die(new Error(`${operation} must run inside Store.transaction: its claim lasts until the transaction ends`))

/** The tables of a fresh, empty store on `db`, and the row operations on them. */
export const makeTables = (db: Database) => {
  const licenses = db.table<Model.License>({
    name: "license",
    unique: { key: (license) => license.key },
    groups: {
      pool: (license) => (license.state === "pending" ? license.generatorId : null),
      policy: (license) => license.policyId
    }
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
  const policies = db.table<Model.Policy>({ name: "policy", unique: {}, groups: {} })
  const apiKeys = db.table<Model.ApiKey>({ name: "api_key", unique: { hash: (key) => key.consumerKeyHash }, groups: {} })
  const deletedApiKeys = db.table<DeletedApiKeyRow>({
    name: "deleted_api_key",
    unique: { hash: (row) => row.consumerKeyHash },
    groups: {}
  })
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
    unique: { external: (row) => (row.externalId === null ? null : `${row.billingProvider}\u0000${row.externalId}`) },
    groups: { due: (row) => (row.dueAt !== null ? 0 : null), license: (row) => row.licenseId }
  })
  const renewals = db.table<Model.RenewalRecord>({
    name: "subscription_renewal",
    unique: {},
    groups: { subscription: (row) => row.subscriptionId }
  })
  const billingEvents = db.table<Model.BillingEvent>({
    name: "billing_event",
    // the first receipt of a provider's event id claims it; later receipts (`duplicate`) are recorded beside it
    unique: { claim: (e) => (e.outcome === "duplicate" ? null : `${e.provider}\u0000${e.eventId}`) },
    groups: { subscription: (e) => e.subscriptionId }
  })
  const auditEntries = db.table<Model.AuditEntry>({ name: "audit_entry", unique: {}, groups: {} })
  const anomalies = db.table<AnomalyRow>({ name: "anomaly", unique: { kind: (a) => `${a.licenseId}\u0000${a.type}` }, groups: {} })
  const releases = db.table<Model.Release>({
    name: "release",
    unique: { version: (r) => `${r.productId}\u0000${r.version}` },
    groups: { product: (r) => r.productId }
  })

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

  return {
    db,
    licenses,
    machines,
    generators,
    policies,
    apiKeys,
    deletedApiKeys,
    signingKeys,
    webhooks,
    deliveries,
    subscriptions,
    renewals,
    billingEvents,
    anomalies,
    releases,
    auditEntries,
    read,
    lockName,
    lockRow,
    replace,
    insertRows,
    eraseRow
  }
}

/** A store's tables and the row operations on them. */
export type Tables = ReturnType<typeof makeTables>
