/**
 * The domain's `EventOutbox` in memory. A transaction's events get their ids when it commits, so ids follow
 * commit order; the revocation sequence grows by one for each append holding an event that changes the CRL.
 */
import { Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import type { Tx } from "./Database.js"
import { frozen, type Tables } from "./Tables.js"

type StoredEvent = Model.StoredEvent

/** The events a transaction appended, published when it commits. */
interface Pending {
  readonly events: Array<Model.DomainEvent>
  revocationBumps: number
}

export const make = (t: Tables) => {
  const { db, read } = t
  /** The committed events, by id - 1. */
  const committedEvents: Array<StoredEvent> = []
  /** Ids of committed events no webhook dispatcher has handled yet, in commit order. */
  const undispatched = new Set<number>()
  let revocationSeq = 0
  const pendingOf = new WeakMap<Tx, Pending>()

  const pending = (tx: Tx): Pending => {
    let p = pendingOf.get(tx)
    if (p === undefined) {
      const created: Pending = { events: [], revocationBumps: 0 }
      pendingOf.set(tx, created)
      tx.onCommit.push(() => {
        for (const event of created.events) {
          const id = committedEvents.length + 1
          // The event is frozen already (`append`): only the row around it is new.
          committedEvents.push(Object.freeze({ id, ...event }))
          undispatched.add(id)
        }
        revocationSeq += created.revocationBumps
      })
      p = created
    }
    return p
  }

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

  return { eventOutbox, committedEvents, undispatched }
}

/** The outbox's committed events, which the webhook delivery queue dispatches. */
export type Outbox = ReturnType<typeof make>
