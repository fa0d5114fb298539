/**
 * The domain's `Store`: its `transaction` is a SQL transaction (retried when it loses a deadlock), and
 * `lockLicense` is `SELECT … FOR UPDATE` on the license row, held until the transaction ends.
 */
import { Effect, Layer } from "effect"
import { PgClient } from "@effect/sql-pg/PgClient"
import { Ports } from "@lm/domain"
import { isDeadlock, orUnavailable } from "./failures.js"
import { firstLicense, licenseRows } from "./licenses.js"

/** How often a transaction that lost a deadlock is retried before the failure is reported. */
const DEADLOCK_RETRIES = 3

export const layer = Layer.effect(
  Ports.Store,
  Effect.gen(function*() {
    const sql = yield* PgClient
    return Ports.Store.of({
      transaction: (effect) =>
        sql.withTransaction(effect).pipe(
          Effect.retry({ while: isDeadlock, times: DEADLOCK_RETRIES }),
          orUnavailable
        ),
      lockLicense: (key) => sql`SELECT * FROM lm_licenses WHERE key = ${key} FOR UPDATE`.pipe(Effect.flatMap(firstLicense), orUnavailable),
      lockLicenses: (keys) =>
        keys.length === 0
          ? Effect.succeed([])
          : sql`SELECT * FROM lm_licenses WHERE key IN ${sql.in([...new Set(keys)])} ORDER BY id FOR UPDATE`.pipe(
            Effect.flatMap(licenseRows),
            orUnavailable
          ),
      lockLicenseById: (id) => sql`SELECT * FROM lm_licenses WHERE id = ${id} FOR UPDATE`.pipe(Effect.flatMap(firstLicense), orUnavailable),
      ping: sql`SELECT 1`.pipe(Effect.asVoid, orUnavailable)
    })
  })
)
