/** The domain's `Store`: its `transaction` is a SQL transaction, retried when it loses a deadlock. */
import { Effect, Layer } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Ports } from "@lm/domain"
import { isDeadlock, storeCalls } from "./failures.js"

/** How often a transaction that lost a deadlock is retried before the failure is reported. */
const DEADLOCK_RETRIES = 3

export const layer = Layer.effect(
  Ports.Store,
  Effect.gen(function*() {
    const sql = yield* PgClient
    const orUnavailable = yield* storeCalls
    return Ports.Store.of({
      transaction: (effect) =>
        sql.withTransaction(effect).pipe(
          Effect.retry({ while: isDeadlock, times: DEADLOCK_RETRIES }),
          orUnavailable
        ),
      ping: sql`SELECT 1`.pipe(Effect.asVoid, orUnavailable)
    })
  })
)
