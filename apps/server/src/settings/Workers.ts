/**
 * `LM_WORKERS`: how many server processes `lm serve` runs on one port (node:cluster, `Cluster.ts`). Unset or `1`:
 * one, this process; `auto`: one per core (`os.availableParallelism()`). Above 1 needs PostgreSQL, the one store
 * several processes share exactly: a PGlite data folder opens in one process only, and each process would have a
 * memory store of its own.
 */
import * as os from "node:os"
import { Config, Effect } from "effect"
import { InvalidSetting } from "@lm/http"
import { readSetting } from "./Read.js"

/** The store kinds, as `storeChoiceFromEnv` (Store.ts) names them. */
export type StoreKind = "pglite" | "postgres" | "memory"

/** `LM_WORKERS` as a count: a whole number of at least 1, or `auto` (the cores); empty is 1. */
export const parseWorkers = (value: string, cores: number): number => {
  const text = value.trim().toLowerCase()
  if (text === "") return 1
  if (text === "auto") return Math.max(1, cores)
  const count = Number(text)
  if (!Number.isInteger(count) || count < 1) throw new Error(`expected a whole number of at least 1, or auto, got ${value}`)
  return count
}

/** Why a store cannot have several processes, or undefined when it can. */
const oneProcessOnly: Record<StoreKind, string | undefined> = {
  postgres: undefined,
  pglite: "a PGlite data folder (LM_DATA_DIR) opens in one process only: set DATABASE_URL (PostgreSQL) to run several",
  memory: "each process would keep a memory store of its own (LM_STORAGE=memory): set DATABASE_URL (PostgreSQL) to run several"
}

/** `LM_WORKERS` from the environment for the store `kind`; above 1 on PGlite or memory refuses the start. */
export const workersFromEnv = (kind: StoreKind): Effect.Effect<number, Config.ConfigError | InvalidSetting> =>
  Effect.gen(function*() {
    const text = yield* Config.String("LM_WORKERS").pipe(Config.withDefault(""))
    const count = yield* readSetting("LM_WORKERS", () => parseWorkers(text, os.availableParallelism()))
    const why = oneProcessOnly[kind]
    if (count > 1 && why !== undefined) {
      const value = text.trim().toLowerCase() === "auto" ? `auto (${count} cores)` : text.trim()
      return yield* new InvalidSetting({ name: "LM_WORKERS", message: `LM_WORKERS=${value}: several server processes need PostgreSQL; ${why}` })
    }
    return count
  })
