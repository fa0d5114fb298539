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
 */
import { randomUUID } from "node:crypto"
import { Clock, Duration, Effect, Layer, Queue, Schedule } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Ports } from "@lm/domain"

/**
 * The channel on which migration 0003's triggers announce every committed change of a license or its machines
 * (payload: the license id). Migrations are frozen and import no live code, so the name is written there too.
 */
export const licenseChangedChannel = "lm_license_changed"

/** Heartbeat payloads: `heartbeat:<feed>:<sent at, epoch ms>`; other processes' heartbeats are ignored. */
const heartbeatPrefix = "heartbeat:"

/**
 * How long one heartbeat NOTIFY may take before the next one is tried. On a frozen link it never answers; the
 * feed is then silent anyway, and the cache has stopped serving.
 */
const heartbeatTimeout = Duration.millis(4 * Ports.feedHeartbeatMillis)

export const layerChangeFeed = Layer.effect(
  Ports.LicenseChangeFeed,
  Effect.gen(function*() {
    const sql = yield* PgClient
    return {
      heartbeats: true,
      subscribe: (onChange: (change: Ports.LicenseChange) => void) => {
        // One feed per subscription: only its own heartbeats tell its own clock's time.
        const own = `${heartbeatPrefix}${randomUUID()}:`
        const report = (payload: string) => {
          if (payload.startsWith(heartbeatPrefix)) {
            const sentAt = payload.startsWith(own) ? Number(payload.slice(own.length)) : Number.NaN
            if (Number.isSafeInteger(sentAt)) onChange({ aliveAsOf: sentAt })
            return
          }
          const id = Number(payload)
          onChange(Number.isSafeInteger(id) ? id : "all")
        }
        const heartbeat = Effect.gen(function*() {
          const sentAt = yield* Clock.currentTimeMillis
          yield* sql.notify(licenseChangedChannel, `${own}${sentAt}`)
        }).pipe(
          Effect.timeout(heartbeatTimeout),
          Effect.ignore,
          Effect.repeat(Schedule.spaced(Duration.millis(Ports.feedHeartbeatMillis)))
        )
        return Effect.scoped(
          Effect.gen(function*() {
            const queue = yield* sql.listen(licenseChangedChannel)
            // Anything committed before LISTEN took effect may have been missed.
            onChange("all")
            // Heartbeats sent before LISTEN took effect would not come back.
            yield* Effect.forkScoped(heartbeat)
            while (true) report((yield* Queue.take(queue)).payload)
          })
        ).pipe(
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
