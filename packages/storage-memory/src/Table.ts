/**
 * A table of rows in memory: rows by id, unique indexes, groups (non-unique indexes) and the overlay a
 * transaction writes into until it commits. Plain data structures; `Database` adds transactions and locks.
 */

/** What every stored row has. */
export interface Row {
  readonly id: number
}

/** The indexes of a table: each function gives a row's key (or null when the row is not indexed). */
export interface TableSpec<R extends Row> {
  readonly name: string
  /** Unique indexes: at most one row per key. */
  readonly unique: Readonly<Record<string, (row: R) => string | null>>
  /** Groups: the rows sharing a number (a license's machines, a generator's pool). */
  readonly groups: Readonly<Record<string, (row: R) => number | null>>
}

/** The ids of one group; iterates in ascending id order. */
class IdSet {
  private ids = new Set<number>()
  private max = 0
  private ascendingOrder = true

  get size(): number {
    return this.ids.size
  }

  add(id: number): void {
    if (this.ids.has(id)) return
    if (id < this.max) this.ascendingOrder = false
    else this.max = id
    this.ids.add(id)
  }

  delete(id: number): void {
    this.ids.delete(id)
  }

  /** The ids in ascending order (sorting once after an out-of-order insert). */
  ascending(): Iterable<number> {
    if (!this.ascendingOrder) {
      this.ids = new Set([...this.ids].sort((a, b) => a - b))
      this.ascendingOrder = true
    }
    return this.ids
  }
}

/** Rows by id with their indexes kept up to date on every put and remove. */
export class Rows<R extends Row> {
  readonly byId = new Map<number, R>()
  private readonly uniqueEntries: ReadonlyArray<readonly [string, (row: R) => string | null, Map<string, number>]>
  private readonly groupEntries: ReadonlyArray<readonly [string, (row: R) => number | null, Map<number, IdSet>]>

  readonly spec: TableSpec<R>

  constructor(spec: TableSpec<R>) {
    this.spec = spec
    this.uniqueEntries = Object.entries(spec.unique).map(([name, keyOf]) => [name, keyOf, new Map<string, number>()] as const)
    this.groupEntries = Object.entries(spec.groups).map(([name, groupOf]) => [name, groupOf, new Map<number, IdSet>()] as const)
  }

  put(row: R): void {
    const old = this.byId.get(row.id)
    for (const [, keyOf, index] of this.uniqueEntries) {
      const before = old === undefined ? null : keyOf(old)
      const after = keyOf(row)
      if (before !== null && before !== after && index.get(before) === row.id) index.delete(before)
      if (after !== null) index.set(after, row.id)
    }
    for (const [, groupOf, groups] of this.groupEntries) {
      const before = old === undefined ? null : groupOf(old)
      const after = groupOf(row)
      if (before === after) continue
      if (before !== null) leaveGroup(groups, before, row.id)
      if (after !== null) {
        let ids = groups.get(after)
        if (ids === undefined) groups.set(after, ids = new IdSet())
        ids.add(row.id)
      }
    }
    this.byId.set(row.id, row)
  }

  remove(id: number): void {
    const old = this.byId.get(id)
    if (old === undefined) return
    for (const [, keyOf, index] of this.uniqueEntries) {
      const key = keyOf(old)
      if (key !== null && index.get(key) === id) index.delete(key)
    }
    for (const [, groupOf, groups] of this.groupEntries) {
      const group = groupOf(old)
      if (group !== null) leaveGroup(groups, group, id)
    }
    this.byId.delete(id)
  }

  /** The id holding `key` in a unique index. */
  idOf(index: string, key: string): number | undefined {
    return this.uniqueEntries.find((entry) => entry[0] === index)?.[2].get(key)
  }

  /** The ids of a group in ascending order. */
  group(name: string, group: number): Iterable<number> {
    return this.groupEntries.find((entry) => entry[0] === name)?.[2].get(group)?.ascending() ?? []
  }
}

const leaveGroup = (groups: Map<number, IdSet>, group: number, id: number) => {
  const ids = groups.get(group)
  if (ids === undefined) return
  ids.delete(id)
  if (ids.size === 0) groups.delete(group)
}

/** What one transaction changed in one table: rows it wrote and base rows it deleted. */
export class Overlay<R extends Row> {
  readonly rows: Rows<R>
  readonly deleted = new Set<number>()
  constructor(spec: TableSpec<R>) {
    this.rows = new Rows(spec)
  }
}

/**
 * A table: the committed rows (`base`), its id sequence, and reads through a transaction's overlay. Every
 * read takes the overlay of the reading transaction, or undefined outside one (then it reads `base` only).
 */
export class Table<R extends Row> {
  readonly base: Rows<R>
  private seq = 0

  readonly spec: TableSpec<R>

  constructor(spec: TableSpec<R>) {
    this.spec = spec
    this.base = new Rows(spec)
  }

  get name(): string {
    return this.spec.name
  }

  /** The next id of the table's sequence (ids are never reused, even after a rollback). */
  nextId(): number {
    return ++this.seq
  }

  get(overlay: Overlay<R> | undefined, id: number): R | undefined {
    if (overlay === undefined) return this.base.byId.get(id)
    if (overlay.deleted.has(id)) return undefined
    return overlay.rows.byId.get(id) ?? this.base.byId.get(id)
  }

  /** The row holding `key` in a unique index. */
  findUnique(overlay: Overlay<R> | undefined, index: string, key: string): R | undefined {
    const keyOf = this.spec.unique[index]!
    if (overlay !== undefined) {
      const id = overlay.rows.idOf(index, key)
      if (id !== undefined) return overlay.rows.byId.get(id)
    }
    const id = this.base.idOf(index, key)
    if (id === undefined) return undefined
    const row = this.get(overlay, id)
    return row !== undefined && keyOf(row) === key ? row : undefined
  }

  /** The rows of a group, in ascending id order, lazily. */
  *inGroup(overlay: Overlay<R> | undefined, name: string, group: number): Generator<R> {
    const groupOf = this.spec.groups[name]!
    const baseIds = this.base.group(name, group)
    if (overlay === undefined) {
      for (const id of baseIds) yield this.base.byId.get(id)!
      return
    }
    const own = [...overlay.rows.group(name, group)]
    const member = (id: number) => {
      const row = this.get(overlay, id)
      return row !== undefined && groupOf(row) === group ? row : undefined
    }
    let i = 0
    for (const id of baseIds) {
      while (i < own.length && own[i]! < id) {
        const row = member(own[i++]!)
        if (row !== undefined) yield row
      }
      if (i < own.length && own[i] === id) i++
      const row = member(id)
      if (row !== undefined) yield row
    }
    while (i < own.length) {
      const row = member(own[i++]!)
      if (row !== undefined) yield row
    }
  }

  /** Every row, in no particular order. */
  *all(overlay: Overlay<R> | undefined): Generator<R> {
    if (overlay === undefined) {
      yield* this.base.byId.values()
      return
    }
    for (const row of this.base.byId.values()) {
      if (overlay.deleted.has(row.id)) continue
      yield overlay.rows.byId.get(row.id) ?? row
    }
    for (const row of overlay.rows.byId.values()) if (!this.base.byId.has(row.id)) yield row
  }

  /** How many rows there are. */
  count(overlay: Overlay<R> | undefined): number {
    if (overlay === undefined) return this.base.byId.size
    let n = this.base.byId.size - overlay.deleted.size
    for (const id of overlay.rows.byId.keys()) if (!this.base.byId.has(id)) n++
    return n
  }

  /** Writes a row into the overlay; returns how to undo it. */
  write(overlay: Overlay<R>, row: R): () => void {
    const undo = this.undoOf(overlay, row.id)
    overlay.deleted.delete(row.id)
    overlay.rows.put(row)
    return undo
  }

  /** Deletes a row in the overlay; returns how to undo it. */
  erase(overlay: Overlay<R>, id: number): () => void {
    const undo = this.undoOf(overlay, id)
    overlay.rows.remove(id)
    if (this.base.byId.has(id)) overlay.deleted.add(id)
    return undo
  }

  private undoOf(overlay: Overlay<R>, id: number): () => void {
    const previous = overlay.rows.byId.get(id)
    const wasDeleted = overlay.deleted.has(id)
    return () => {
      if (previous === undefined) overlay.rows.remove(id)
      else overlay.rows.put(previous)
      if (wasDeleted) overlay.deleted.add(id)
      else overlay.deleted.delete(id)
    }
  }

  /** Makes a committed overlay's changes the table's rows. */
  apply(overlay: Overlay<R>): void {
    for (const id of overlay.deleted) this.base.remove(id)
    for (const row of overlay.rows.byId.values()) this.base.put(row)
  }
}
