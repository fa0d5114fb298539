/**
 * The master key that seals secrets at rest (CONTRACT §13): `LM_MASTER_KEY`, `LM_MASTER_KEY_FILE`, or a key file
 * in the data folder, created on first start.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Config, Effect, Option, Redacted, Result } from "effect"
import { Secrets } from "@lm/domain"
import type { StoreChoice } from "../Store.js"

/** A master key could not be had (unreadable file, bad text, a file others may read). */
const masterKeyRefused = (message: string) => Effect.fail(new Secrets.InvalidMasterKey({ message }))

/** Reads a key file, refusing one that users other than the service's may read or write. */
const readKeyFile = (file: string) =>
  Effect.gen(function*() {
    const stat = yield* Effect.try({
      try: () => fs.statSync(file),
      catch: () => new Secrets.InvalidMasterKey({ message: `The master key file ${file} cannot be read.` })
    })
    if ((stat.mode & 0o077) !== 0) {
      return yield* masterKeyRefused(`The master key file ${file} is open to other users (mode ${(stat.mode & 0o777).toString(8)}): chmod 600 it.`)
    }
    const text = fs.readFileSync(file, "utf8")
    return yield* Effect.fromResult(Secrets.parseMasterKey(text)).pipe(
      Effect.mapError(() => new Secrets.InvalidMasterKey({ message: `The master key file ${file} must hold the base64 of 32 bytes.` }))
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
      return yield* Effect.fromResult(Secrets.parseMasterKey(Redacted.value(given.value)))
    }
    const file = yield* Config.String("LM_MASTER_KEY_FILE").pipe(Config.option)
    if (Option.isSome(file)) return yield* readKeyFile(file.value)
    if (choice._tag === "memory") return undefined
    const dataDir = choice._tag === "pglite" ? choice.dataDir : yield* Config.String("LM_DATA_DIR").pipe(Config.withDefault("./data"))
    const keyFile = path.join(dataDir, "master.key")
    if (!fs.existsSync(keyFile)) {
      fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 })
      const created = Result.try(() => fs.writeFileSync(keyFile, `${Secrets.generateMasterKeyText()}\n`, { mode: 0o600, flag: "wx" }))
      // Another process may have created it first: then it is read like any existing file.
      if (Result.isSuccess(created)) {
        yield* Effect.logInfo(`Created the master key ${keyFile}: back it up apart from the store; without it the signing key cannot be opened.`)
      }
    }
    return yield* readKeyFile(keyFile)
  })
