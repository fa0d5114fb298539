/**
 * Transactions over in-memory tables: each transaction writes into its own overlays (copy-on-write), so
 * others keep reading committed rows and a rollback just drops the overlays; a commit applies them in one
 * synchronous step. Row locks (held until the transaction ends) serialise writers of a row, unique keys that
 * an open transaction wrote are reserved until it ends, and a wait that would close a cycle of waits fails
 * as a deadlock instead of hanging.
 */
import { Context, Effect, Exit } from "effect"
import { Overlay, type Row, Table, type TableSpec } from "./Table.js"

/** One open transaction. Fibers find theirs through the database's fiber-local `current` reference. */
export interface Tx {
  open: boolean
  readonly overlays: Map<Table<any>, Overlay<any>>
  /** Lock names held, released when the transaction ends. */
  readonly held: Array<string>
  /** Unique keys reserved, freed when the transaction ends. */
  readonly reserved: Array<string>
  /** Undo steps, kept while a nested transaction (a savepoint) is open. */
  readonly journal: Array<() => void>
  savepoints: number
  /** The transaction this one waits for, for deadlock detection. */
  blockedBy: (() => Tx | undefined) | undefined
  readonly onEnd: Array<() => void>
  /** Work that runs when the transaction commits (after its rows are applied). */
  readonly onCommit: Array<() => void>
}

interface Lock {
  owner: Tx
  readonly queue: Array<{ readonly tx: Tx; readonly resume: () => void }>
}

/** A wait that would never end: two transactions wait for each other (a defect, as in PostgreSQL). */
export class DeadlockDetected extends Error {
  constructor(what: string) {
    super(`deadlock detected while waiting for ${what}`)
    this.name = "DeadlockDetected"
  }
}

let instances = 0

/** The transactional core of one memory store. */
export class Database {
  /** The transaction of the current fiber; the key is unique per store, so stores never share transactions. */
  readonly current = Context.Reference<Tx | undefined>(`@lm/storage-memory/Transaction#${++instances}`, {
    defaultValue: () => undefined
  })
  private readonly locks = new Map<string, Lock>()
  private readonly reservations = new Map<string, Tx>()

  /** A table of this database. */
  table<R extends Row>(spec: TableSpec<R>): Table<R> {
    return new Table(spec)
  }

  /**
   * Runs `effect` in a transaction: a top-level one commits on success and rolls back on any failure, defect
   * or interruption; a nested one joins the enclosing transaction as a savepoint (its writes commit with the
   * outer one, and its own failure undoes only its writes before the failure propagates).
   */
  transaction<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    return Effect.withFiber((fiber) => {
      const outer = this.txOf(fiber.getRef(this.current))
      if (outer !== undefined) return this.savepoint(outer, effect)
      return Effect.acquireUseRelease(
        Effect.sync(() => this.begin()),
        (tx) => Effect.provideService(effect, this.current, tx),
        (tx, exit) => Effect.sync(() => (Exit.isSuccess(exit) ? this.commit(tx) : this.end(tx)))
      )
    })
  }

  /** Runs `f` in the current fiber's transaction, or in a transaction of its own (autocommit). */
  inTransaction<A, E>(f: (tx: Tx) => Effect.Effect<A, E>): Effect.Effect<A, E> {
    return Effect.withFiber((fiber) => {
      const tx = this.txOf(fiber.getRef(this.current))
      if (tx !== undefined) return f(tx)
      return this.transaction(Effect.withFiber((inner) => f(inner.getRef(this.current)!)))
    })
  }

  /** The current fiber's open transaction, if any, for reads (which never need one). */
  readTx(fiber: { getRef<X>(ref: Context.Reference<X>): X }): Tx | undefined {
    return this.txOf(fiber.getRef(this.current))
  }

  /** The overlay a reader sees of `table`: none outside a transaction or before it wrote to the table. */
  overlayOf<R extends Row>(tx: Tx | undefined, table: Table<R>): Overlay<R> | undefined {
    return tx?.overlays.get(table) as Overlay<R> | undefined
  }

  /** Writes a row in the transaction. */
  put<R extends Row>(tx: Tx, table: Table<R>, row: R): void {
    this.ensureOpen(tx)
    this.record(tx, table.write(this.overlayFor(tx, table), row))
  }

  /** Deletes a row in the transaction. */
  erase<R extends Row>(tx: Tx, table: Table<R>, id: number): void {
    this.ensureOpen(tx)
    this.record(tx, table.erase(this.overlayFor(tx, table), id))
  }

  /** Registers an undo step for the enclosing savepoints (none needed outside one). */
  record(tx: Tx, undo: () => void): void {
    if (tx.savepoints > 0) tx.journal.push(undo)
  }

  /**
   * Writes rows after checking each unique index against what the transaction sees and against keys other
   * open transactions reserved (waiting for such a transaction to end, then checking again). Writes nothing
   * and answers false when a key is taken (also by another row of `rows`).
   */
  putUnique<R extends Row>(tx: Tx, table: Table<R>, rows: ReadonlyArray<R>): Effect.Effect<boolean> {
    return Effect.suspend(() => {
      this.ensureOpen(tx)
      const overlay = this.overlayOf(tx, table)
      const names = new Set<string>()
      for (const row of rows) {
        for (const [index, keyOf] of Object.entries(table.spec.unique)) {
          const key = keyOf(row)
          if (key === null) continue
          const name = `${table.name}.${index}:${key}`
          if (names.has(name)) return Effect.succeed(false)
          names.add(name)
          const existing = table.findUnique(overlay, index, key)
          if (existing !== undefined && existing.id !== row.id) return Effect.succeed(false)
          const owner = this.reservations.get(name)
          if (owner !== undefined && owner !== tx && owner.open) {
            return Effect.andThen(this.waitForEnd(tx, owner, `key ${name}`), this.putUnique(tx, table, rows))
          }
        }
      }
      for (const name of names) {
        if (this.reservations.get(name) === tx) continue
        this.reservations.set(name, tx)
        tx.reserved.push(name)
      }
      for (const row of rows) this.put(tx, table, row)
      return Effect.succeed(true)
    })
  }

  /** Takes a row lock for the transaction, waiting in line while another transaction holds it. */
  lock(tx: Tx, name: string): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.ensureOpen(tx)
      const lock = this.locks.get(name)
      if (lock === undefined) {
        this.locks.set(name, { owner: tx, queue: [] })
        tx.held.push(name)
        return Effect.void
      }
      if (lock.owner === tx) return Effect.void
      if (this.waitsFor(lock.owner, tx)) return Effect.die(new DeadlockDetected(`lock ${name}`))
      return Effect.callback<void>((resume) => {
        const waiter = { tx, resume: () => resume(Effect.void) }
        lock.queue.push(waiter)
        tx.blockedBy = () => this.locks.get(name)?.owner
        return Effect.sync(() => {
          const at = lock.queue.indexOf(waiter)
          if (at >= 0) lock.queue.splice(at, 1)
          tx.blockedBy = undefined
        })
      })
    })
  }

  /** Takes a row lock only if no other transaction holds it (SKIP LOCKED); answers whether it did. */
  tryLock(tx: Tx, name: string): boolean {
    this.ensureOpen(tx)
    const lock = this.locks.get(name)
    if (lock === undefined) {
      this.locks.set(name, { owner: tx, queue: [] })
      tx.held.push(name)
      return true
    }
    return lock.owner === tx
  }

  /** Whether another transaction than `tx` holds a row lock. */
  lockedByOther(tx: Tx | undefined, name: string): boolean {
    const lock = this.locks.get(name)
    return lock !== undefined && lock.owner !== tx
  }

  private begin(): Tx {
    return {
      open: true,
      overlays: new Map(),
      held: [],
      reserved: [],
      journal: [],
      savepoints: 0,
      blockedBy: undefined,
      onEnd: [],
      onCommit: []
    }
  }

  private savepoint<A, E, R>(tx: Tx, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    return Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        const mark = tx.journal.length
        tx.savepoints++
        return Effect.onExit(restore(effect), (exit) =>
          Effect.sync(() => {
            tx.savepoints--
            if (!Exit.isSuccess(exit) && tx.open) {
              while (tx.journal.length > mark) tx.journal.pop()!()
            }
            if (tx.savepoints === 0) tx.journal.length = 0
          }))
      })
    )
  }

  private commit(tx: Tx): void {
    if (!tx.open) return
    for (const [table, overlay] of tx.overlays) table.apply(overlay)
    for (const run of tx.onCommit) run()
    this.end(tx)
  }

  /** Ends a transaction (after a commit, or as its rollback): frees its locks and reservations. */
  private end(tx: Tx): void {
    if (!tx.open) return
    tx.open = false
    for (const name of tx.held) this.release(name)
    for (const name of tx.reserved) if (this.reservations.get(name) === tx) this.reservations.delete(name)
    for (const wake of tx.onEnd) wake()
  }

  private release(name: string): void {
    const lock = this.locks.get(name)
    if (lock === undefined) return
    while (lock.queue.length > 0) {
      const next = lock.queue.shift()!
      if (!next.tx.open) continue
      lock.owner = next.tx
      next.tx.held.push(name)
      next.tx.blockedBy = undefined
      next.resume()
      return
    }
    this.locks.delete(name)
  }

  private waitForEnd(tx: Tx, other: Tx, what: string): Effect.Effect<void> {
    if (this.waitsFor(other, tx)) return Effect.die(new DeadlockDetected(what))
    return Effect.callback<void>((resume) => {
      if (!other.open) return resume(Effect.void)
      const wake = () => {
        tx.blockedBy = undefined
        resume(Effect.void)
      }
      other.onEnd.push(wake)
      tx.blockedBy = () => (other.open ? other : undefined)
      return Effect.sync(() => {
        const at = other.onEnd.indexOf(wake)
        if (at >= 0) other.onEnd.splice(at, 1)
        tx.blockedBy = undefined
      })
    })
  }

  /** Whether `from` (transitively) waits for `target`. */
  private waitsFor(from: Tx, target: Tx): boolean {
    let tx: Tx | undefined = from
    for (let steps = 0; tx !== undefined && steps < 100_000; steps++) {
      if (tx === target) return true
      tx = tx.blockedBy?.()
    }
    return false
  }

  private overlayFor<R extends Row>(tx: Tx, table: Table<R>): Overlay<R> {
    let overlay = tx.overlays.get(table) as Overlay<R> | undefined
    if (overlay === undefined) {
      overlay = new Overlay(table.spec)
      tx.overlays.set(table, overlay)
    }
    return overlay
  }

  private txOf(tx: Tx | undefined): Tx | undefined {
    return tx !== undefined && tx.open ? tx : undefined
  }

  private ensureOpen(tx: Tx): void {
    if (!tx.open) throw new Error("the transaction has already ended")
  }
}
