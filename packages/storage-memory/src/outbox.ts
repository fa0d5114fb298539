/**
 * The domain's `EventOutbox` in memory. A transaction's events get their ids when it commits, so ids follow
 * commit order; the revocation sequence grows by one for each append holding an event that changes the CRL.
 * The outbox holds the newest `outboxWindow` events, and past them only the events a webhook still needs: not yet
 * fanned out, or named by a delivery the delivery log holds (one pending, or finished and redeliverable).
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

export const make = (t: Tables, outboxWindow: number) => {
  const { db, deliveries, read, webhooks } = t
  /**
   * The outbox's newest `outboxWindow` committed events: `recentEvents[i]` is event `eventsBefore + i + 1`, and the
   * slots before `recentHead` have left the window (emptied, and sliced off now and then).
   */
  let recentEvents: Array<StoredEvent | undefined> = []
  let recentHead = 0
  let eventsBefore = 0
  /** Events that left the window while a webhook still needed them, in id order. */
  const keptEvents = new Map<number, StoredEvent>()
  /** Ids of committed events no webhook dispatcher has handled yet, in commit order. */
  const undispatched = new Set<number>()
  let revocationSeq = 0
  const pendingOf = new WeakMap<Tx, Pending>()

  /** The id the last committed outbox event got. */
  const lastEventId = () => eventsBefore + recentEvents.length

  /** A committed outbox event the store holds (in the window, or kept past it). */
  const eventOf = (id: number): StoredEvent | undefined => {
    if (!Number.isInteger(id) || id < 1) return undefined
    const at = id - eventsBefore - 1
    return at >= recentHead ? recentEvents[at] : keptEvents.get(id)
  }

  /**
   * Whether a webhook still needs an event: it is not fanned out yet, or a committed delivery names it (pending,
   * or finished and redeliverable while the delivery log holds it).
   */
  const neededByWebhooks = (id: number): boolean => {
    if (undispatched.has(id)) return true
    for (const webhook of webhooks.all(undefined)) {
      if (deliveries.findUnique(undefined, "event", `${webhook.id}\u0000${id}`) !== undefined) return true
    }
    return false
  }

  /** Events past `outboxWindow` leave the window: dropped, unless a webhook still needs them. */
  const trimOutbox = () => {
    while (recentEvents.length - recentHead > outboxWindow) {
      const event = recentEvents[recentHead]!
      recentEvents[recentHead++] = undefined
      if (neededByWebhooks(event.id)) keptEvents.set(event.id, event)
    }
    if (recentHead > 1_024 && recentHead * 2 > recentEvents.length) {
      recentEvents = recentEvents.slice(recentHead)
      eventsBefore += recentHead
      recentHead = 0
    }
  }

  /**
   * Drops an event kept past the window once no webhook needs it: called when it is fanned out, and when
   * deliveries naming it leave the delivery log (erased with their webhook, or past the delivery window).
   */
  const releaseEvent = (id: number) => {
    if (keptEvents.has(id) && !neededByWebhooks(id)) keptEvents.delete(id)
  }

  /** Marks committed events as fanned out (the dispatch committed): past the window, they may go. */
  const dispatched = (ids: ReadonlyArray<number>) => {
    for (const id of ids) {
      undispatched.delete(id)
      releaseEvent(id)
    }
  }

  const pending = (tx: Tx): Pending => {
    let p = pendingOf.get(tx)
    if (p === undefined) {
      const created: Pending = { events: [], revocationBumps: 0 }
      pendingOf.set(tx, created)
      tx.onCommit.push(() => {
        for (const event of created.events) {
          const id = lastEventId() + 1
          // The event is frozen already (`append`): only the row around it is new.
          recentEvents.push(Object.freeze({ id, ...event }))
          undispatched.add(id)
        }
        if (created.events.length > 0) trimOutbox()
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
        const from = Math.max(0, Math.floor(afterId) || 0)
        const max = Math.max(0, limit) || 0
        const out: Array<StoredEvent> = []
        // The ones kept past the window, then the window (every id in it is held).
        const beforeWindow = eventsBefore + recentHead
        if (from < beforeWindow) {
          for (const [id, event] of keptEvents) {
            if (out.length >= max) break
            if (id > from) out.push(event)
          }
        }
        for (let id = Math.max(from, beforeWindow) + 1; id <= lastEventId() && out.length < max; id++) out.push(eventOf(id)!)
        const own = tx === undefined ? undefined : pendingOf.get(tx)
        if (own !== undefined) {
          // The transaction's own events, with the ids they would get if it committed now.
          own.events.forEach((event, i) => {
            const id = lastEventId() + 1 + i
            if (id > afterId && out.length < max) out.push({ id, ...event })
          })
        }
        return out
      }),
    findById: (id) => Effect.sync(() => eventOf(id)),
    findByIds: (ids) =>
      Effect.sync(() =>
        ids.flatMap((id) => {
          const event = eventOf(id)
          return event === undefined ? [] : [event]
        })
      ),
    revocationSeq: read((tx) => revocationSeq + (tx === undefined ? 0 : pendingOf.get(tx)?.revocationBumps ?? 0))
  })

  return { eventOutbox, undispatched, eventOf, dispatched, releaseEvent }
}

/** The outbox's committed events, which the webhook delivery queue dispatches and the webhooks' deliveries hold. */
export type Outbox = ReturnType<typeof make>
