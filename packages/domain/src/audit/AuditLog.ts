/**
 * The audit log (CONTRACT §18): every management write, refused ones included, with its actor, IP, action,
 * target, request id and status.
 *
 * An adapter wraps each management write once (the HTTP server in its authentication middleware, the `lm`
 * command line around its store commands) with {@link AuditLog.audited}, giving what it knows before the write
 * runs. From there the domain records it:
 * - the first `Store.transaction` the write runs appends the entry inside that transaction (see
 *   {@link layerAuditedStore}), with the write's success status: it commits with the change, or rolls back with it;
 * - when no transaction committed it (the write was refused, or changed nothing through a transaction), the entry
 *   is appended on its own once the write has answered, with the status it answered.
 * The target's id is the one in the request (a path's key or id); for a write that creates its target, it is
 * taken from the first event the transaction writes, or else from the answer.
 */
import { Clock, Context, Effect, Exit, Layer, Option } from "effect"
import { EventOutbox, Store } from "../shared/ports.js"
import type { PageRequest } from "../shared/ports.js"
import type { DomainEvent } from "../shared/model.js"
import type { AuditActor, AuditDraft, AuditFilter, AuditTarget } from "./model.js"
import { AuditLogRepository } from "./ports.js"

/** A management write about to run, as its adapter knows it. */
export interface AuditedWrite {
  readonly actor: AuditActor
  readonly ip: string | null
  readonly action: string
  readonly target: AuditTarget
  readonly requestId: string | null
  /** The status a success answers (200, 201, 202, 204). */
  readonly successStatus: number
}

/** How a write ended: the status it answered and, when the request did not name it, its target's id. */
export interface AuditOutcome {
  readonly status: number
  readonly targetId?: string | null | undefined
}

/** The write in progress in this fiber, and whether its entry is written. */
interface AuditState {
  readonly write: AuditedWrite
  targetId: string | null
  /** Inside the transaction that appends the entry. */
  inTransaction: boolean
  /** The entry is committed. */
  recorded: boolean
}

class AuditScope extends Context.Service<AuditScope, AuditState>()("@lm/domain/AuditScope") {}

/**
 * The id of the target of `type` that an event names: a license by its key, anything else by `<type>_id` or `id`
 * in the event's data.
 */
const targetIdOf = (type: string, event: DomainEvent): string | null => {
  const value = type === "license" ? event.data["license_key"] : event.data[`${type}_id`] ?? event.data["id"]
  return typeof value === "string" || typeof value === "number" ? String(value) : null
}

const draftOf = (state: AuditState, at: number, status: number): AuditDraft => ({
  at,
  actor: state.write.actor,
  ip: state.write.ip,
  action: state.write.action,
  target: { type: state.write.target.type, id: state.targetId },
  requestId: state.write.requestId,
  status
})

/** The audit log: recording management writes, and reading them. */
export class AuditLog extends Context.Service<AuditLog, {
  /**
   * Runs a management write with its entry recorded (see the module comment). `outcome` tells how it ended from
   * its exit; a failure to write the entry after the fact is logged, and the write's own answer stands.
   */
  readonly audited: <A, E, R>(
    write: AuditedWrite,
    effect: Effect.Effect<A, E, R>,
    outcome: (exit: Exit.Exit<A, E>) => AuditOutcome
  ) => Effect.Effect<A, E, R>
  /** Appends an entry as it is (e.g. a command-line write on the store), in the caller's transaction if any. */
  readonly record: (draft: Omit<AuditDraft, "at">) => Effect.Effect<void, import("../shared/errors.js").StorageUnavailable>
  /** The entries matching `filter`, newest first. */
  readonly list: (filter: AuditFilter, page: PageRequest) => ReturnType<AuditLogRepository["Service"]["list"]>
}>()("@lm/domain/AuditLog") {
  static readonly layer = Layer.effect(
    AuditLog,
    Effect.gen(function*() {
      const repository = yield* AuditLogRepository
      return AuditLog.of({
        audited: (write, effect, outcome) => {
          const state: AuditState = { write, targetId: write.target.id, inTransaction: false, recorded: false }
          return Effect.provideService(effect, AuditScope, state).pipe(
            Effect.onExit((exit) => {
              if (state.recorded) return Effect.void
              const { status, targetId } = outcome(exit)
              if (state.targetId === null && targetId !== undefined) state.targetId = targetId
              return Clock.currentTimeMillis.pipe(
                Effect.flatMap((at) => repository.append(draftOf(state, at, status))),
                Effect.catchCause((cause) => Effect.logWarning("audit log entry not written", cause))
              )
            })
          )
        },
        record: (draft) => Effect.flatMap(Clock.currentTimeMillis, (at) => Effect.asVoid(repository.append({ ...draft, at }))),
        list: (filter, page) => repository.list(filter, page)
      })
    })
  )
}

/**
 * `Store` and `EventOutbox` over the store's, for audited writes: the first transaction of an audited write
 * appends its entry before it commits, and the events it writes name a created target (see the module comment).
 * Outside an audited write both are the store's own.
 */
export const layerAuditedStore: Layer.Layer<Store | EventOutbox, never, Store | EventOutbox | AuditLogRepository> = Layer
  .effectContext(
    Effect.gen(function*() {
      const store = yield* Store
      const outbox = yield* EventOutbox
      const repository = yield* AuditLogRepository
      const current = Effect.map(Effect.serviceOption(AuditScope), Option.getOrUndefined)
      const auditedStore = Store.of({
        ...store,
        transaction: (effect) =>
          Effect.flatMap(current, (state) => {
            if (state === undefined || state.recorded || state.inTransaction) return store.transaction(effect)
            state.inTransaction = true
            const appended = Effect.tap(effect, () =>
              Effect.flatMap(Clock.currentTimeMillis, (at) => repository.append(draftOf(state, at, state.write.successStatus))))
            return store.transaction(appended).pipe(
              Effect.tap(() => Effect.sync(() => { state.recorded = true })),
              Effect.ensuring(Effect.sync(() => { state.inTransaction = false }))
            )
          })
      })
      const auditedOutbox = EventOutbox.of({
        ...outbox,
        append: (events) =>
          Effect.flatMap(current, (state) => {
            if (state !== undefined && state.inTransaction && state.targetId === null) {
              for (const event of events) {
                const id = targetIdOf(state.write.target.type, event)
                if (id !== null) {
                  state.targetId = id
                  break
                }
              }
            }
            return outbox.append(events)
          })
      })
      return Context.make(Store, auditedStore).pipe(Context.add(EventOutbox, auditedOutbox))
    })
  )
