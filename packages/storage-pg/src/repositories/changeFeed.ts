/**
 * The domain's `LicenseChangeFeed` on PostgreSQL: LISTEN on the channel the triggers NOTIFY, so every server
 * process hears about license and machine changes the others commit, at commit time. A lost listening
 * connection reports `"all"` (the cache drops everything) and listening starts again a second later.
 */
import { Duration, Effect, Layer, Queue, Schedule } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Ports } from "@lm/domain"

/**
 * The channel on which migration 0003's triggers announce every committed change of a license or its machines
 * (payload: the license id). Migrations are frozen and import no live code, so the name is written there too.
 */
export const licenseChangedChannel = "lm_license_changed"

export const layerChangeFeed = Layer.effect(
  Ports.LicenseChangeFeed,
  Effect.gen(function*() {
    const sql = yield* PgClient
    return {
      subscribe: (onChange: (licenseId: number | "all") => void) =>
        Effect.scoped(
          Effect.gen(function*() {
            const queue = yield* sql.listen(licenseChangedChannel)
            // Anything committed before LISTEN took effect may have been missed.
            onChange("all")
            while (true) {
              const notification = yield* Queue.take(queue)
              const id = Number(notification.payload)
              onChange(Number.isSafeInteger(id) ? id : "all")
            }
          })
        ).pipe(
          Effect.tapCause(() => Effect.sync(() => onChange("all"))),
          Effect.retry(Schedule.spaced(Duration.seconds(1))),
          Effect.ignore,
          Effect.forkScoped,
          Effect.asVoid
        )
    }
  })
)
