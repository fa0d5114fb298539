/**
 * The master key that seals secrets at rest (CONTRACT §13): `LM_MASTER_KEY`, `LM_MASTER_KEY_FILE`, or a key file
 * in the data folder, created on first start.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Config, Effect, Option, Redacted, Result } from "effect"
import { Secrets } from "@lm/domain"
import type { StoreChoice } from "../Store.js"
import { readSetting } from "./Read.js"

/** The code of a failed file system call (`ENOENT`), or its message. */
const fileError = (error: unknown): string =>
  (error as NodeJS.ErrnoException)?.code ?? (error instanceof Error ? error.message : String(error))

/**
 * Reads a key file, refusing one that users other than the service's may read or write. `setting` is the one
 * that named the file (`LM_MASTER_KEY_FILE`, or `LM_DATA_DIR` for the default one), which each refusal names.
 */
const readKeyFile = (file: string, setting: string) =>
  Effect.gen(function*() {
    const refused = (why: string) => new Secrets.InvalidMasterKey({ message: `${setting}: the master key file ${file} ${why}` })
    const stat = yield* Effect.try({ try: () => fs.statSync(file), catch: (error) => refused(`cannot be read (${fileError(error)}).`) })
    if ((stat.mode & 0o077) !== 0) {
      return yield* refused(`is open to other users (mode ${(stat.mode & 0o777).toString(8)}): chmod 600 it.`)
    }
    const text = yield* Effect.try({ try: () => fs.readFileSync(file, "utf8"), catch: (error) => refused(`cannot be read (${fileError(error)}).`) })
    return yield* Effect.fromResult(Secrets.parseMasterKey(text)).pipe(
      Effect.mapError(() => refused("must hold the base64 of 32 bytes."))
    )
  })

/**
 * The master key (CONTRACT §13): `LM_MASTER_KEY` (base64 of 32 bytes), else the file `LM_MASTER_KEY_FILE`, else
 * `{LM_DATA_DIR}/master.key`, created (mode 0600) on first start with a log line. The memory store keeps nothing,
 * so without a setting it runs on a key of its own process.
 */
export const masterKeyFromEnv = (choice: StoreChoice) =>
  Effect.gen(function*() {
    const given = yield* Config.Redacted("LM_MASTER_KEY").pipe(Config.option)
    if (Option.isSome(given)) {
      return yield* Effect.fromResult(Secrets.parseMasterKey(Redacted.value(given.value))).pipe(
        Effect.mapError(() => new Secrets.InvalidMasterKey({ message: "LM_MASTER_KEY: must be the base64 of 32 bytes." }))
      )
    }
    const file = yield* Config.String("LM_MASTER_KEY_FILE").pipe(Config.option)
    if (Option.isSome(file)) return yield* readKeyFile(file.value, "LM_MASTER_KEY_FILE")
    if (choice._tag === "memory") return undefined
    const dataDir = choice._tag === "pglite" ? choice.dataDir : yield* Config.String("LM_DATA_DIR").pipe(Config.withDefault("./data"))
    const keyFile = path.join(dataDir, "master.key")
    if (!fs.existsSync(keyFile)) {
      yield* readSetting("LM_DATA_DIR", () => {
        try {
          fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 })
        } catch (error) {
          throw new Error(`cannot create the folder ${dataDir} (${fileError(error)})`)
        }
      })
      const created = Result.try(() => fs.writeFileSync(keyFile, `${Secrets.generateMasterKeyText()}\n`, { mode: 0o600, flag: "wx" }))
      // Another process may have created it first: then it is read like any existing file.
      if (Result.isSuccess(created)) {
        yield* Effect.logInfo(`Created the master key ${keyFile}: back it up apart from the store; without it the signing key cannot be opened.`)
      }
    }
    return yield* readKeyFile(keyFile, "LM_DATA_DIR")
  })
