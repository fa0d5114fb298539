/** The domain's `Store` in memory: transactions over the tables (see `Database.ts`). */
import { Ports } from "@lm/domain"
import { Effect } from "effect"
import type { Tables } from "./Tables.js"

export const make = (t: Tables): Ports.Store["Service"] => {
  const { db } = t

  return Ports.Store.of({
    transaction: (effect) => db.transaction(effect),
    ping: Effect.void
  })
}
