/**
 * Which artifact store keeps the release uploads: an S3-compatible bucket (`LM_ARTIFACT_S3_*`), else a folder
 * (`LM_ARTIFACT_DIR`, default `{LM_DATA_DIR}/artifacts`), else (the memory store, tests) a temporary folder
 * removed when the server stops. An unfinished upload older than `LM_UPLOAD_TIMEOUT_SECONDS` (the longest an upload
 * may take, `HttpSettings.uploadTimeoutSeconds`) is the leftover of a process killed midway: removed at start and
 * then once per that period.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Config, Context, Effect, Layer } from "effect"
import { Errors, Ports } from "@lm/domain"
import { HttpSettings } from "@lm/http"
import * as FileArtifactStore from "./artifacts/FileArtifactStore.js"

/** Where an S3-compatible artifact store is. */
export interface ArtifactS3Settings {
  readonly bucket: string
  /** An S3-compatible server's URL (path-style requests are used then); unset: AWS S3. */
  readonly endpoint: string | undefined
  readonly region: string
  readonly prefix: string
}

/** Where release artifacts are kept. */
export interface ArtifactSettings {
  /**
   * `LM_ARTIFACT_DIR` (default `{LM_DATA_DIR}/artifacts`): the folder of uploaded release artifacts. Undefined (the
   * memory store, tests): a new temporary folder for the life of the process.
   */
  readonly dir: string | undefined
  /**
   * `LM_ARTIFACT_S3_BUCKET` (with `LM_ARTIFACT_S3_ENDPOINT`, `LM_ARTIFACT_S3_REGION`, `LM_ARTIFACT_S3_PREFIX`): keep
   * artifacts in an S3-compatible bucket instead of `dir`, so that several servers share them. Credentials come
   * from the AWS SDK's usual chain (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, a profile, a role).
   */
  readonly s3: ArtifactS3Settings | undefined
}

/** The artifact settings; by default a temporary folder. */
export const ArtifactSettings = Context.Reference<ArtifactSettings>("lm/server/ArtifactSettings", {
  defaultValue: () => ({ dir: undefined, s3: undefined })
})

/** `LM_ARTIFACT_DIR` (default `{LM_DATA_DIR}/artifacts`, none with `LM_STORAGE=memory`) and `LM_ARTIFACT_S3_*`. */
export const artifactSettingsFromEnv: Effect.Effect<ArtifactSettings, Config.ConfigError> = Effect.gen(function*() {
  const dirSetting = yield* Config.String("LM_ARTIFACT_DIR").pipe(Config.withDefault(""))
  const dataDir = yield* Config.String("LM_DATA_DIR").pipe(Config.withDefault("./data"))
  const memory = (yield* Config.String("LM_STORAGE").pipe(Config.withDefault(""))) === "memory"
  const dir = dirSetting !== "" ? dirSetting : memory ? undefined : `${dataDir}/artifacts`
  const s3Bucket = yield* Config.String("LM_ARTIFACT_S3_BUCKET").pipe(Config.withDefault(""))
  const s3 = s3Bucket === "" ? undefined : {
    bucket: s3Bucket,
    endpoint: (yield* Config.String("LM_ARTIFACT_S3_ENDPOINT").pipe(Config.withDefault(""))) || undefined,
    region: yield* Config.String("LM_ARTIFACT_S3_REGION").pipe(Config.withDefault("us-east-1")),
    prefix: yield* Config.String("LM_ARTIFACT_S3_PREFIX").pipe(Config.withDefault(""))
  }
  return { dir, s3 }
})

/** `ArtifactSettings` read from the environment. */
export const layerArtifactSettingsFromEnv: Layer.Layer<never, Config.ConfigError> = Layer.effect(
  ArtifactSettings,
  artifactSettingsFromEnv
)

/**
 * The artifact store of release uploads, as {@link ArtifactSettings} say, removing the leftovers of uploads older
 * than the upload timeout of `HttpSettings`.
 */
export const artifactStoreLayer: Layer.Layer<Ports.ArtifactStore, Errors.StorageUnavailable, HttpSettings> = Layer.unwrap(Effect.gen(function*() {
  const { dir, s3 } = yield* ArtifactSettings
  const { uploadTimeoutSeconds } = yield* HttpSettings
  const leftovers = { leftoverAfterMillis: uploadTimeoutSeconds * 1000 }
  if (s3 !== undefined) {
    // Loaded only for a bucket: the AWS SDK is hundreds of modules, slow to load at every start.
    const S3ArtifactStore = yield* Effect.promise(() => import("./artifacts/S3ArtifactStore.js"))
    return S3ArtifactStore.layer({
      bucket: s3.bucket,
      prefix: s3.prefix,
      client: {
        region: s3.region,
        ...(s3.endpoint === undefined ? {} : { endpoint: s3.endpoint, forcePathStyle: true })
      },
      ...leftovers
    })
  }
  if (dir !== undefined) {
    return Layer.effect(
      Ports.ArtifactStore,
      FileArtifactStore.makeSweeping(dir, leftovers).pipe(
        Effect.mapError((error) => new Errors.StorageUnavailable({ message: `LM_ARTIFACT_DIR: ${error.message}` }))
      )
    )
  }
  const temporary = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "lm-artifacts-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  return FileArtifactStore.layer(temporary)
}))
