/**
 * The composition root of the bundled server: picks the store (embedded PGlite by default, PostgreSQL with
 * `DATABASE_URL`, memory with `LM_STORAGE=memory`), builds the domain's engine (`Engine.layer`) on it, and serves the lm/v1 API. The store opens (and migrates) before the port listens; on SIGTERM the server
 * stops accepting, finishes requests in flight, flushes the event log and closes the store, in that order.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Config, Context, Effect, Exit, Layer, Option, Redacted, Result, Scope } from "effect"
import { ActivityRecorder, ApiKeys, Engine, Errors, Ports, Secrets, Services, Webhook } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { layerPgliteStore, layerPostgresStore, type PgliteOptions, pgliteThreads } from "@lm/storage-pg"
import { Api } from "../api/Api.js"
import { ApiKeyAuthenticator } from "./Authentication.js"
import { ApiKeysHandlers } from "./handlers/ApiKeys.js"
import { ClientHandlers } from "./handlers/Client.js"
import { GeneratorsHandlers } from "./handlers/Generators.js"
import { LicensesHandlers } from "./handlers/Licenses.js"
import { MachinesHandlers } from "./handlers/Machines.js"
import { SubscriptionsHandlers } from "./handlers/Subscriptions.js"
import { AnalyticsHandlers } from "./handlers/Analytics.js"
import { WebhooksHandlers } from "./handlers/Webhooks.js"
import { ReleasesHandlers, UpdatesHandlers } from "./handlers/Releases.js"
import { ReleaseRoutes } from "./ReleaseRoutes.js"
import { layerConsoleFromEnv } from "./Console.js"
import * as FileArtifactStore from "../artifacts/FileArtifactStore.js"
import * as S3ArtifactStore from "../artifacts/S3ArtifactStore.js"
import { FastPath } from "./FastPath.js"
import { RestRequestValid } from "./Guards.js"
import { layerClientRateLimit, rateLimitsFromEnv } from "./RateLimits.js"
import { layerRedisRateLimits } from "./RedisRateLimits.js"
import { layerMiddlewares, layerRoutes, layerServer, type RequestCounter } from "./Http.js"
import { HttpSettings, InvalidSetting, type Listen, parseSwitch, readSetting } from "./Settings.js"
import * as WebhookSender from "./WebhookSender.js"
import { StorageHealth, SystemHandlers } from "./System.js"

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
      return MemoryStore.layer
    case "pglite":
      return Layer.catchTag(layerPgliteStore({ dataDir: choice.dataDir, thread: choice.thread }), "StorageUnavailable", refused)
    case "postgres":
      return Layer.catchTag(layerPostgresStore({ url: choice.url }), "StorageUnavailable", refused)
  }
}

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

/**
 * The webhook settings from the environment: `LM_WEBHOOK_ALLOW_INSECURE` (http URLs), `LM_WEBHOOK_ALLOW_PRIVATE`
 * (loopback, private and link-local addresses), `LM_WEBHOOK_RETRY_SCHEDULE` (seconds, comma separated),
 * `LM_WEBHOOK_TIMEOUT` (seconds an attempt may take, default 10; a worker's claim on a delivery lasts twice that
 * plus 5 s, after which a crashed worker's deliveries are attempted again).
 */
export const webhookOptionsFromEnv = Effect.gen(function*() {
  const insecure = yield* Config.String("LM_WEBHOOK_ALLOW_INSECURE").pipe(Config.withDefault(""))
  const privateAddresses = yield* Config.String("LM_WEBHOOK_ALLOW_PRIVATE").pipe(Config.withDefault(""))
  const schedule = yield* Config.String("LM_WEBHOOK_RETRY_SCHEDULE").pipe(Config.option)
  const timeout = yield* Config.Int("LM_WEBHOOK_TIMEOUT").pipe(Config.option)
  return {
    attemptTimeoutMillis: Option.isSome(timeout) ? Math.max(1, timeout.value) * 1000 : undefined,
    leaseMillis: Option.isSome(timeout) ? Webhook.leaseMillisFor(Math.max(1, timeout.value) * 1000) : undefined,
    allowInsecure: yield* readSetting("LM_WEBHOOK_ALLOW_INSECURE", () => parseSwitch(insecure, false)),
    allowPrivate: yield* readSetting("LM_WEBHOOK_ALLOW_PRIVATE", () => parseSwitch(privateAddresses, false)),
    retrySchedule: Option.isNone(schedule)
      ? undefined
      : yield* readSetting("LM_WEBHOOK_RETRY_SCHEDULE", () => Result.getOrThrowWith(Webhook.parseRetrySchedule(schedule.value), (m) => new Error(m)))
  } satisfies Engine.WebhookOptions
})

/**
 * The anomaly thresholds from the environment (CONTRACT §11; each unset one keeps its default):
 * `LM_ANOMALY_FINGERPRINT_CHURN` (5), `LM_ANOMALY_IP_CHURN` (10), `LM_ANOMALY_SPIKE_FACTOR` (3),
 * `LM_ANOMALY_SPIKE_MINIMUM` (20), `LM_ANOMALY_FAILED_BURST` (20). Each must be a positive number.
 */
export const anomalyThresholdsFromEnv = Effect.gen(function*() {
  const positive = (name: string, integer: boolean) =>
    Effect.flatMap((integer ? Config.Int(name) : Config.Number(name)).pipe(Config.option), (value) =>
      Option.isNone(value)
        ? Effect.succeed(undefined)
        : readSetting(name, () => {
          if (!(value.value > 0)) throw new Error("must be a positive number")
          return value.value
        }))
  return {
    fingerprintChurn: yield* positive("LM_ANOMALY_FINGERPRINT_CHURN", true),
    ipChurn: yield* positive("LM_ANOMALY_IP_CHURN", true),
    spikeFactor: yield* positive("LM_ANOMALY_SPIKE_FACTOR", false),
    spikeMinimum: yield* positive("LM_ANOMALY_SPIKE_MINIMUM", true),
    failedBurst: yield* positive("LM_ANOMALY_FAILED_BURST", true)
  }
})

/** The engine's settings from the environment: `LM_SIGNING_KEY`, `LM_OFFLINE_TTL`, `LM_BLACKLIST` (comma
 * separated), `LM_SWEEP_INTERVAL`, `LM_SEAT_BATCH_WORKERS`, `LM_EVENT_RETENTION_DAYS`, `LM_FEED_STALE_MS`,
 * `LM_PAYMENT_GRACE_DAYS`, `LM_SUBSCRIPTION_JOB_INTERVAL`, `LM_ANOMALY_INTERVAL`, `LM_DOWNLOAD_TOKEN_TTL`, the webhook settings, the rate
 * limits (`LM_RATE_LIMIT*`, see `RateLimits.ts`) and the anomaly thresholds (see `Engine.Options`). */
export const engineOptionsFromEnv = (choice: StoreChoice) => Effect.gen(function*() {
  const masterKey = yield* masterKeyFromEnv(choice)
  const signingKey = yield* Config.Redacted("LM_SIGNING_KEY").pipe(Config.option)
  const offline = yield* Config.Int("LM_OFFLINE_TTL").pipe(Config.option)
  const blacklist = yield* Config.String("LM_BLACKLIST").pipe(Config.withDefault(""))
  const sweep = yield* Config.Int("LM_SWEEP_INTERVAL").pipe(Config.withDefault(Engine.defaultSweepIntervalSeconds))
  const seatBatchWorkers = yield* Config.Int("LM_SEAT_BATCH_WORKERS").pipe(Config.option)
  // A number of days, fractions allowed (0.01 is 14.4 minutes: short windows for tests and benches).
  const eventRetentionDays = yield* Config.Number("LM_EVENT_RETENTION_DAYS").pipe(Config.withDefault(Engine.defaultEventRetentionDays))
  const webhooks = yield* webhookOptionsFromEnv
  const feedStaleMillis = yield* Config.Int("LM_FEED_STALE_MS").pipe(Config.withDefault(Services.defaultFeedStaleMillis))
  if (feedStaleMillis < Services.minFeedStaleMillis) {
    return yield* new InvalidSetting({
      name: "LM_FEED_STALE_MS",
      message: `LM_FEED_STALE_MS: expected at least ${Services.minFeedStaleMillis} (two change feed heartbeats), got ${feedStaleMillis}`
    })
  }
  // Days after an unpaid period end before a subscription goes on-hold (fractions allowed, for tests).
  const paymentGraceDays = yield* Config.Number("LM_PAYMENT_GRACE_DAYS").pipe(Config.option)
  const subscriptionJob = yield* Config.Int("LM_SUBSCRIPTION_JOB_INTERVAL").pipe(Config.option)
  const anomalyInterval = yield* Config.Number("LM_ANOMALY_INTERVAL").pipe(Config.option)
  if (Option.isSome(anomalyInterval) && !(anomalyInterval.value >= 0 && Number.isFinite(anomalyInterval.value))) {
    return yield* new InvalidSetting({ name: "LM_ANOMALY_INTERVAL", message: "LM_ANOMALY_INTERVAL: expected a number of seconds, 0 (off) or more" })
  }
  const rateLimits = yield* rateLimitsFromEnv
  const downloadTokenTtl = yield* Config.Int("LM_DOWNLOAD_TOKEN_TTL").pipe(Config.option)
  if (Option.isSome(downloadTokenTtl) && downloadTokenTtl.value < 1) {
    return yield* new InvalidSetting({ name: "LM_DOWNLOAD_TOKEN_TTL", message: "LM_DOWNLOAD_TOKEN_TTL: expected a whole number of seconds of at least 1" })
  }
  return {
    downloadTokenTtlSeconds: Option.getOrUndefined(downloadTokenTtl),
    webhooks,
    rateLimits,
    anomalyThresholds: yield* anomalyThresholdsFromEnv,
    masterKey,
    signingKey: Option.getOrUndefined(signingKey),
    offlineTtlSeconds: Option.getOrUndefined(offline),
    blacklist: blacklist.split(",").filter((e) => e.trim() !== ""),
    sweepIntervalSeconds: sweep,
    seatBatchWorkers: Option.getOrUndefined(seatBatchWorkers),
    eventRetentionDays,
    validationCache: { feedStaleMillis },
    paymentGraceDays: Option.getOrUndefined(paymentGraceDays),
    subscriptionJobIntervalSeconds: Option.getOrUndefined(subscriptionJob),
    anomalyIntervalSeconds: Option.getOrUndefined(anomalyInterval)
  } satisfies Engine.Options
})

/** API credentials checked against the domain's API keys. */
const authenticatorLayer = Layer.effect(
  ApiKeyAuthenticator,
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    return ApiKeyAuthenticator.of({
      authenticate: (consumerKey, consumerSecret) =>
        apiKeys.authenticate(consumerKey, consumerSecret).pipe(
          Effect.map((key) => ({ id: key.id, scope: key.scope })),
          Effect.catchTag("Unauthorized", () => Effect.succeed(undefined))
        )
    })
  })
)

const storageHealthLayer = (storage: string) =>
  Layer.effect(
    StorageHealth,
    Effect.map(Ports.Store, (store) => StorageHealth.of({ storage, check: store.ping }))
  )

/** The routes of the whole API with their handlers, middlewares and health check, on an engine; the console beside them. */
export const routesLayer = (storage: string) => {
  const handlers = Layer.mergeAll(
    SystemHandlers,
    ClientHandlers,
    LicensesHandlers,
    MachinesHandlers,
    GeneratorsHandlers,
    ApiKeysHandlers,
    WebhooksHandlers,
    SubscriptionsHandlers,
    AnalyticsHandlers,
    ReleasesHandlers,
    UpdatesHandlers
  ).pipe(
    Layer.provide(ReleaseRoutes.layer),
    Layer.provide(layerMiddlewares),
    Layer.provide(authenticatorLayer),
    Layer.provide(storageHealthLayer(storage))
  )
  return layerRoutes(Api).pipe(
    Layer.provide(handlers),
    Layer.provide(authenticatorLayer),
    Layer.provide(storageHealthLayer(storage)),
    // Outside the API's mount at LM_REST_ROOT: the console is at {base_url}/console/.
    Layer.merge(layerConsoleFromEnv())
  )
}

/**
 * The bootstrap key of CONTRACT §2: `LM_BOOTSTRAP_CONSUMER_*` ensured by the domain's rule (not restored once an
 * administrator deleted it and other read_write keys exist), or one printed when the store has none.
 */
export const bootstrapKeyLayer = Layer.effectDiscard(
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    // Empty is unset.
    const key = Option.filter(yield* Config.String("LM_BOOTSTRAP_CONSUMER_KEY").pipe(Config.option), (text) => text !== "")
    const secret = Option.filter(
      yield* Config.Redacted("LM_BOOTSTRAP_CONSUMER_SECRET").pipe(Config.option),
      (text) => Redacted.value(text) !== ""
    )
    if (Option.isSome(key) !== Option.isSome(secret)) {
      return yield* new InvalidSetting({
        name: Option.isSome(key) ? "LM_BOOTSTRAP_CONSUMER_SECRET" : "LM_BOOTSTRAP_CONSUMER_KEY",
        message: "LM_BOOTSTRAP_CONSUMER_KEY and LM_BOOTSTRAP_CONSUMER_SECRET go together: set both, or neither"
      })
    }
    if (Option.isSome(key) && Option.isSome(secret)) {
      // The shape of API credentials is the domain's; a malformed one is a setting to fix, not a 401 at every call.
      if (!Services.consumerKeyPattern.test(key.value)) {
        return yield* new InvalidSetting({
          name: "LM_BOOTSTRAP_CONSUMER_KEY",
          message: "LM_BOOTSTRAP_CONSUMER_KEY: expected ck_ followed by 40 lowercase hex characters"
        })
      }
      if (!Services.consumerSecretPattern.test(Redacted.value(secret.value))) {
        return yield* new InvalidSetting({
          name: "LM_BOOTSTRAP_CONSUMER_SECRET",
          message: "LM_BOOTSTRAP_CONSUMER_SECRET: expected cs_ followed by 40 lowercase hex characters"
        })
      }
      const ensured = yield* apiKeys.ensure({
        consumerKey: key.value,
        consumerSecret: Redacted.value(secret.value),
        scope: "read_write",
        description: "bootstrap"
      })
      if (ensured.action === "withhold") {
        yield* Effect.logWarning(
          "bootstrap key not restored: the LM_BOOTSTRAP_CONSUMER_KEY key was deleted and other read_write keys exist"
        )
      }
      return
    }
    const issued = yield* apiKeys.bootstrapIfEmpty
    if (issued !== undefined) {
      // Printed once, on stdout, so an operator can pick it up; it is never logged again.
      process.stdout.write(`bootstrap api key: consumer_key=${issued.consumerKey} consumer_secret=${issued.consumerSecret}\n`)
    }
  })
)

/**
 * How long closing the engine (flushing the event log, closing the store) may take on SIGTERM, after the server
 * has finished its requests: a store that does not answer must not keep the process from exiting.
 */
export const engineCloseTimeoutMillis = 5000

/**
 * The engine, whose closing is given up after `ms` (it goes on, detached, until the process exits): then one
 * line says so, with the count of events not written.
 */
const closingWithin = <A, E, R>(engine: Layer.Layer<A | ActivityRecorder, E, R>, ms: number) =>
  Layer.effectContext(Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(engine, scope).pipe(Effect.onError((cause) => Scope.close(scope, Exit.failCause(cause))))
    yield* Effect.addFinalizer((exit) =>
      Effect.gen(function*() {
        const closing = yield* Effect.forkDetach(Scope.close(scope, exit))
        // Waited for with a timer, not by interrupting the wait: this runs while the process's main fiber is
        // being interrupted (SIGTERM), so an interruptible wait would end at once.
        const closed = yield* Effect.callback<boolean>((resume) => {
          const timer = setTimeout(() => resume(Effect.succeed(false)), ms)
          closing.addObserver(() => {
            clearTimeout(timer)
            resume(Effect.succeed(true))
          })
        })
        if (closed) return
        const pending = yield* Context.get(context, ActivityRecorder).pending
        yield* Effect.logWarning(
          `shutdown: the store did not answer within ${ms / 1000} s; ${Services.unwrittenMessage(pending)}`
        )
      })
    )
    return context
  }))

/**
 * The artifact store of release uploads: an S3-compatible bucket (`LM_ARTIFACT_S3_BUCKET`), else the folder `HttpSettings.artifactDir` (`{LM_DATA_DIR}/artifacts` by
 * default), or a new temporary folder when none is set (the memory store, tests), removed when the server stops.
 * An unfinished upload older than `LM_UPLOAD_TIMEOUT_SECONDS` (the longest an upload may take) is the leftover of
 * a process killed midway: removed at start and then once per that period.
 */
export const artifactStoreLayer = Layer.unwrap(Effect.gen(function*() {
  const { artifactDir, artifactS3, uploadTimeoutSeconds } = yield* HttpSettings
  const leftovers = { leftoverAfterMillis: uploadTimeoutSeconds * 1000 }
  if (artifactS3 !== undefined) {
    return S3ArtifactStore.layer({
      bucket: artifactS3.bucket,
      prefix: artifactS3.prefix,
      client: {
        region: artifactS3.region,
        ...(artifactS3.endpoint === undefined ? {} : { endpoint: artifactS3.endpoint, forcePathStyle: true })
      },
      ...leftovers
    })
  }
  if (artifactDir !== undefined) {
    return Layer.effect(
      Ports.ArtifactStore,
      FileArtifactStore.makeSweeping(artifactDir, leftovers).pipe(
        Effect.mapError((error) => new Errors.StorageUnavailable({ message: `LM_ARTIFACT_DIR: ${error.message}` }))
      )
    )
  }
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "lm-artifacts-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  return FileArtifactStore.layer(dir)
}))

/**
 * The whole server on a store choice, listening on `listen`. Rate limits are shared through the Redis of
 * `redisUrl` (`LM_REDIS_URL`) when given, else through the store when it is PostgreSQL.
 */
export const serverLayer = (
  choice: StoreChoice,
  listen: Listen,
  options: Engine.Options = {},
  redisUrl: Redacted.Redacted | undefined = undefined
) =>
  serverLayerOn(
    // Merged after the store: the Redis buckets replace PostgreSQL's.
    redisUrl === undefined ? storeLayer(choice) : Layer.merge(storeLayer(choice), layerRedisRateLimits(redisUrl)),
    { storage: storeName(choice), description: describeStore(choice) },
    listen,
    options
  )

/**
 * The whole server on any store layer (tests use throw-away stores). Webhooks are delivered with the undici
 * sender unless `options.webhooks.sender` gives another one; `sender` tunes the undici one.
 */
export const serverLayerOn = <E, R>(
  store: Layer.Layer<Engine.StorePorts, E, R>,
  names: { readonly storage: string; readonly description: string },
  listen: Listen,
  options: Engine.Options = {},
  sender: Partial<WebhookSender.WebhookSenderOptions> = {}
) =>
  Layer.unwrap(Effect.map(
    options.webhooks?.sender === undefined ? WebhookSender.withSender(options, sender) : Effect.succeed(options),
    (engineOptions) => {
      // Batched background jobs yield to the requests this server receives (`RequestLoad`).
      const requests: RequestCounter = { started: 0 }
      const withLoad: Engine.Options = { requestsStarted: () => requests.started, ...engineOptions }
      return layerServer(routesLayer(names.storage), { ...listen, logExtra: `store: ${names.description}`, requests }).pipe(
        // Below the server: it closes after the server has finished its requests in flight.
        Layer.provideMerge(FastPath.layer),
        // The public guards (the rate limit) for both the fast path and the handlers.
        Layer.provideMerge(layerClientRateLimit),
        Layer.provideMerge(bootstrapKeyLayer),
        Layer.provideMerge(artifactStoreLayer),
        Layer.provideMerge(closingWithin(Engine.layer(store, withLoad), engineCloseTimeoutMillis))
      )
    }
  ))

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
