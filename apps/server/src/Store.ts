/**
 * The store the server runs on: embedded PGlite by default, PostgreSQL with `DATABASE_URL`, memory with
 * `LM_STORAGE=memory`. The one module of the packages that picks a store package.
 */
import { Config, Effect, Layer, Option, Redacted } from "effect"
// `Ports` names the store's ports in the declaration of `storeLayer`.
import { type Engine, Errors, type Ports } from "@lm/domain"
import { layerPgliteStore, layerPostgresStore, type PgliteOptions, pgliteThreads } from "@lm/storage-pg"

/** Which store the server runs on. */
export type StoreChoice =
  | { readonly _tag: "pglite"; readonly dataDir: string; readonly thread?: PgliteOptions["thread"] }
  | { readonly _tag: "postgres"; readonly url: Redacted.Redacted<string> }
  | { readonly _tag: "memory" }

/**
 * `LM_STORAGE=memory`, else `DATABASE_URL` (PostgreSQL), else PGlite in `LM_DATA_DIR` (default `./data`), on
 * the thread `LM_PGLITE_THREAD` names (`worker`, the default, or `main`).
 */
export const storeChoiceFromEnv = Effect.gen(function*() {
  const storage = yield* Config.String("LM_STORAGE").pipe(Config.withDefault(""))
  if (storage === "memory") return { _tag: "memory" } as StoreChoice
  const url = yield* Config.Redacted("DATABASE_URL").pipe(Config.option)
  if (Option.isSome(url) && Redacted.value(url.value) !== "") return { _tag: "postgres", url: url.value } as StoreChoice
  const dataDir = yield* Config.String("LM_DATA_DIR").pipe(Config.withDefault("./data"))
  const thread = yield* Config.Literals(pgliteThreads, "LM_PGLITE_THREAD").pipe(Config.withDefault("worker" as const))
  return { _tag: "pglite", dataDir, thread } as StoreChoice
})

/** A short description of the store for the start-up line and `/health`. */
export const storeName = (choice: StoreChoice): string => choice._tag

/** The setting that chose the store, which a store that cannot be opened is refused by. */
const storeSetting = (choice: StoreChoice): string => choice._tag === "postgres" ? "DATABASE_URL" : "LM_DATA_DIR"

/**
 * Every port of the domain on the chosen store (opened and migrated when the layer is built). A store that cannot
 * be opened fails with a message naming the setting that chose it.
 */
export const storeLayer = (choice: StoreChoice) => {
  const refused = (error: Errors.StorageUnavailable) =>
    Layer.effectContext<Engine.StorePorts, Errors.StorageUnavailable, never>(
      Effect.fail(new Errors.StorageUnavailable({ message: `${storeSetting(choice)} (${describeStore(choice)}): ${error.message}` }))
    )
  switch (choice._tag) {
    case "memory":
      // Loaded only for this store.
      return Layer.unwrap(Effect.promise(() => import("@lm/storage-memory")).pipe(Effect.map(({ MemoryStore }) => MemoryStore.layer)))
    case "pglite":
      return Layer.catchTag(layerPgliteStore({ dataDir: choice.dataDir, thread: choice.thread }), "StorageUnavailable", refused)
    case "postgres":
      return Layer.catchTag(layerPostgresStore({ url: choice.url }), "StorageUnavailable", refused)
  }
}

/** The store as the start-up line names it (never the password of a URL). */
export const describeStore = (choice: StoreChoice): string => {
  switch (choice._tag) {
    case "memory":
      return "memory (not durable)"
    case "pglite":
      return `pglite ${choice.dataDir}`
    case "postgres": {
      try {
        const url = new URL(Redacted.value(choice.url))
        url.password = ""
        return `postgres ${url.host}${url.pathname}`
      } catch {
        return "postgres"
      }
    }
  }
}
