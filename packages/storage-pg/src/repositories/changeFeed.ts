/**
 * The domain's `LicenseChangeFeed` on PostgreSQL: LISTEN on the channel the triggers NOTIFY, so every server
 * process hears about license and machine changes the others commit, at commit time. A lost listening
 * connection reports `"all"` (the cache drops everything) and listening starts again a second later.
 *
 * A black-holed link neither delivers nor fails, so the feed also proves that it is alive: every
 * `Ports.feedHeartbeatMillis` it sends a heartbeat NOTIFY on the same channel, carrying the time it was sent, and
 * reports `{ aliveAsOf: sentAt }` when that heartbeat comes back on the listening connection. PostgreSQL delivers
 * notifications in commit order, so by then every change committed before `sentAt` has been reported. The domain
 * decides how long a silence is allowed; this file only reports.
 *
 * When the heartbeats are taken by the store but do not come back for {@link relistenAfterMillis}, the listening
 * connection itself is stuck (a connection frozen or dropped without a word, while the pool's others work): the feed
 * reports `"all"` and listens again on another connection. The stuck one is let go in the background (its UNLISTEN
 * waits for the link), so the new LISTEN never waits for it.
 */
import { randomUUID } from "node:crypto"
import { Cause, Duration, Effect, Exit, Layer, Queue, Schedule, Scope } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Ports } from "@lm/domain"

/**
 * The channel on which migration 0003's triggers announce every committed change of a license or its machines
 * (payload: the license id). Migrations are frozen and import no live code, so the name is written there too.
 */
export const licenseChangedChannel = "lm_license_changed"

/** Payloads of policy changes (migration 0014's trigger): `policy:<id>`. */
const policyPrefix = "policy:"

/** Heartbeat payloads: `heartbeat:<feed>:<sent at, epoch ms>`; other processes' heartbeats are ignored. */
const heartbeatPrefix = "heartbeat:"

/**
 * How long one heartbeat NOTIFY may take before the next one is tried. On a frozen link it never answers; the
 * feed is then silent anyway, and the cache has stopped serving.
 */
const heartbeatTimeout = Duration.millis(4 * Ports.feedHeartbeatMillis)

/** How long heartbeats the store took may go without coming back before the listening connection is replaced. */
export const relistenAfterMillis = 10 * Ports.feedHeartbeatMillis

/** Fails once a heartbeat that the store took was sent `relistenAfterMillis` after the last one that came back. */
class ListenerStuck {
  readonly _tag = "ListenerStuck"
}

export const layerChangeFeed = Layer.effect(
  Ports.LicenseChangeFeed,
  Effect.gen(function*() {
    const sql = yield* PgClient
    return {
      heartbeats: true,
      subscribe: (onChange: (change: Ports.LicenseChange) => void) => {
        // One feed per subscription: only its own heartbeats are stamped in this process's time.
        const own = `${heartbeatPrefix}${randomUUID()}:`
        /** Send times (`feedTimeMillis`) of the last heartbeat that came back, and of the last one the store took. */
        let lastBack = 0
        let lastTaken = 0
        const report = (payload: string) => {
          if (payload.startsWith(heartbeatPrefix)) {
            const sentAt = payload.startsWith(own) ? Number(payload.slice(own.length)) : Number.NaN
            if (Number.isSafeInteger(sentAt)) {
              lastBack = Math.max(lastBack, sentAt)
              onChange({ aliveAsOf: sentAt })
            }
            return
          }
          if (payload.startsWith(policyPrefix)) {
            const policyId = Number(payload.slice(policyPrefix.length))
            onChange(Number.isSafeInteger(policyId) ? { policyId } : "all")
            return
          }
          const id = Number(payload)
          onChange(Number.isSafeInteger(id) ? id : "all")
        }
        const heartbeat = Effect.gen(function*() {
          const sentAt = yield* Ports.feedTimeMillis
          yield* sql.notify(licenseChangedChannel, `${own}${sentAt}`)
          lastTaken = Math.max(lastTaken, sentAt)
        }).pipe(
          Effect.timeout(heartbeatTimeout),
          Effect.ignore,
          Effect.repeat(Schedule.spaced(Duration.millis(Ports.feedHeartbeatMillis)))
        )
        const stuck = Effect.suspend(() =>
          lastTaken - lastBack > relistenAfterMillis ? Effect.fail(new ListenerStuck()) : Effect.void
        ).pipe(Effect.repeat(Schedule.spaced(Duration.millis(Ports.feedHeartbeatMillis))))
        const listenOnce = Effect.gen(function*() {
          const scope = yield* Scope.make()
          const listening = Effect.gen(function*() {
            const queue = yield* Scope.provide(sql.listen(licenseChangedChannel), scope)
            // A fresh listener has until `relistenAfterMillis` from now to hear its first heartbeat.
            lastBack = Math.max(lastBack, yield* Ports.feedTimeMillis)
            // Anything committed before LISTEN took effect may have been missed.
            onChange("all")
            // Heartbeats sent before LISTEN took effect would not come back.
            yield* Effect.forkIn(heartbeat, scope)
            return yield* Effect.raceFirst(
              Effect.forever(Effect.map(Queue.take(queue), (notification) => report(notification.payload))),
              stuck
            )
          })
          return yield* listening.pipe(
            Effect.onExit((exit) =>
              // After a failure (a stuck or lost connection) the listener is let go in the background: an UNLISTEN
              // on a stuck connection waits for the link. When the feed is closed, it is let go at once.
              Exit.isFailure(exit) && Cause.hasFails(exit.cause)
                ? Effect.asVoid(Effect.forkDetach(Scope.close(scope, exit)))
                : Scope.close(scope, exit)
            )
          )
        })
        return listenOnce.pipe(
          Effect.tapCause(() => Effect.sync(() => onChange("all"))),
          Effect.retry(Schedule.spaced(Duration.seconds(1))),
          Effect.ignore,
          Effect.forkScoped,
          Effect.asVoid
        )
      }
    }
  })
)
