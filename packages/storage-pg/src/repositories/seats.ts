/**
 * The domain's seat rule in SQL, written once: every query that looks for or counts machines holding a seat uses
 * {@link holdsSeat}. The rule itself is `Machine.holdsSeat` (`packages/domain/src/licensing/machine.ts`): an
 * `active` machine holds its seat until its seat deadline (the earlier of its lease end and its heartbeat
 * deadline; none: for good). The store compares the deadline stored with the machine, which the domain keeps
 * equal to `Machine.seatDeadline` on every write (`Machine.holdsSeatByDeadline`); `test/seats.test.ts` runs this
 * fragment over random machines and checks that it agrees with `Machine.holdsSeat` on each.
 */
import type { PgClient } from "@effect/sql-pg/PgClient"
import type { Statement } from "effect/sql"
import { date } from "./rows.js"

/** The condition "the machine `machines` (a table alias of `lm_machines`) holds a seat at `at`" (epoch ms). */
export const holdsSeat = (sql: PgClient, machines: string, at: number): Statement.Fragment =>
  sql`${sql(machines)}.status = 'active' AND (${sql(machines)}.seat_deadline IS NULL OR ${sql(machines)}.seat_deadline > ${date(at)})`
