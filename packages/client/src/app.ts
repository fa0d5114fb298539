/**
 * Helpers for a licensed application: activate this device, validate online (with a random nonce whose echo
 * and signature under the app's trusted keys are checked), keep the offline proof in storage, judge it on the
 * server's clock, a heartbeat loop with backoff that renews a floating lease and stops (saying why) when the
 * seat is gone, update checks and checked downloads, and deactivate on shutdown.
 */
import {
  normaliseLicenseKey,
  type PublishedKey,
  readCrl,
  type TrustedKey,
  trustedKeySet,
  trustedKeysProblem,
  verifyToken
} from "@lm/domain/verify"
import type { ConnectionOptions } from "./api.js"
import {
  type ActivatedMachine,
  type ActivateInput,
  createClient,
  type HeartbeatResponse,
  type LmClient,
  type UpdateCheckInput,
  type ValidateResponse
} from "./client.js"
import { checkEntitlement, type Entitlement, type OfflineState, serverTimeOf } from "./entitlement.js"
import { LmError } from "./errors.js"
import { memoryStorage, type Storage } from "./storage.js"
import { type AvailableUpdate, blobTarget, type DownloadTarget, downloadUpdate, toUpdateCheck, type UpdateCheck } from "./updates.js"

/** Settings of {@link createLicensedApp}. */
export interface LicensedAppOptions extends ConnectionOptions {
  /** The license key as the user typed it: trimmed and upper-cased as the server does. */
  readonly licenseKey: string
  /** This device's fingerprint (in Node: `machineFingerprint` from `@lm/client/node`). */
  readonly fingerprint: string
  /**
   * The vendor's public keys, bundled into the app when it is built: the `public_key` values (or `{ kid,
   * public_key }` entries) of `GET /public-key`'s `keys`, the next key too before a rotation. A token entitles
   * only when it verifies under one of them; no server answer and nothing in storage adds to them.
   */
  readonly trustedKeys?: ReadonlyArray<TrustedKey>
  /**
   * Without `trustedKeys`: trust the keys of the first `/public-key` answer and keep them in storage. Whoever
   * answers first (or can write the storage) decides what entitles: see the README. Refused with `trustedKeys`.
   */
  readonly trustOnFirstUse?: boolean
  /** The app's product id: a license of another product (or of none) does not entitle (`product_mismatch`). */
  readonly productId?: number
  /** Where the offline proof is kept (default: in memory). */
  readonly storage?: Storage
  /** What `activate` reports about this device: `name`, `hostname`, `platform`, `app_version`, `components`, `meta`. */
  readonly device?: Omit<ActivateInput, "license_key" | "fingerprint">
  /** The device's clock, epoch milliseconds (default `Date.now`); tests inject one. */
  readonly now?: () => number
  /**
   * Tolerated error of the server time this device estimates, seconds (default 300): a token issued further
   * ahead is refused, and a time further below the time floor is a clock rollback.
   */
  readonly driftSeconds?: number
  /** The oldest revocation list `entitlement()` accepts, seconds (default 7 days). */
  readonly maxCrlAgeSeconds?: number
  /** An existing client (default: one made from the connection options). */
  readonly client?: LmClient
}

/** The outcome of an online validation, after its signature and nonce checked out. */
export interface Validation {
  readonly valid: boolean
  /**
   * `valid`, the server's refusal code (`license_suspended`, `fingerprint_not_activated`, ...), or
   * `product_mismatch` when the server said valid for a license of another product than the app's.
   */
  readonly code: string
  /** True when this device holds no seat and a seat is free: `activate()` would take one. */
  readonly needsActivation: boolean
  readonly response: ValidateResponse
}

/** Why a heartbeat loop stopped. */
export type HeartbeatStop =
  | { readonly reason: "stopped" }
  /** The server refused the beat: `machine_inactive`, `machine_revoked`, `machine_not_found`, `license_*`, `blacklisted`. */
  | { readonly reason: "refused"; readonly code: string; readonly error: LmError }

/** Settings of {@link LicensedApp.startHeartbeat}. */
export interface HeartbeatOptions {
  /** Milliseconds between beats (default: half the time the server allows until the next one). */
  readonly intervalMs?: number
  /** First retry delay after a failure that may pass (network, 408, 429, 5xx), doubled per failure (default 1 000). */
  readonly minBackoffMs?: number
  /** Longest retry delay (default 60 000). */
  readonly maxBackoffMs?: number
  /** Called after each accepted beat. */
  readonly onBeat?: (beat: HeartbeatResponse) => void
  /** Called after each failure that will be retried, with the delay before the retry. */
  readonly onRetry?: (error: LmError, delayMs: number) => void
  /** Called once when the loop ends. */
  readonly onStop?: (stop: HeartbeatStop) => void
}

/** A running heartbeat loop. */
export interface HeartbeatLoop {
  /** Stops the loop (no beat after this). */
  stop(): void
  /** Resolves when the loop ends, with why. */
  readonly stopped: Promise<HeartbeatStop>
}

/** A licensed application on this device. */
export interface LicensedApp {
  readonly licenseKey: string
  readonly fingerprint: string
  readonly client: LmClient
  /** Takes (or confirms) this device's seat and keeps its certificate. */
  activate(): Promise<ActivatedMachine>
  /**
   * Validates online with a fresh random nonce; checks the nonce echo and the signature of the answer under the
   * trusted keys, measures the server's clock (`server_time`, which must be the signed time) and resets the time
   * floor to it, keeps the license token when valid (drops it on a refusal), and fetches the revocation list.
   * Rejects with `verification_failed` when the answer does not verify.
   */
  validate(): Promise<Validation>
  /** Fetches the revocation list (no validation); with `trustOnFirstUse`, the keys first if none are kept yet. */
  refresh(): Promise<void>
  /** The offline answer from storage alone (see `entitlement.ts`). Raises and keeps the time floor. */
  entitlement(): Promise<Entitlement>
  /**
   * Whether this device may use the feature `code` now, offline: {@link entitlement} entitles and the cached,
   * verified license token lists `code` among the license's effective entitlements (CONTRACT §15). The codes are
   * those of the token's last online validation.
   */
  entitled(code: string): Promise<boolean>
  /**
   * Asks the server for a newer release of the app's product for this license and device: `version` is the
   * running one (default `device.app_version`), `channel` the app's (default `stable`).
   */
  checkForUpdate(options?: { readonly version?: string; readonly channel?: UpdateCheckInput["channel"] }): Promise<UpdateCheck>
  /**
   * Downloads an offered update into `to` (default: a `Blob`; in Node, `fileTarget(path)` from
   * `@lm/client/node`), keeping it only when its size and SHA-256 are the release's (else `checksum_mismatch`,
   * nothing kept). The check's `download_url` is valid for a few minutes: download soon after checking.
   */
  download(update: AvailableUpdate): Promise<Blob>
  download<A>(update: AvailableUpdate, to: DownloadTarget<A>): Promise<A>
  /** Starts beating; the loop stops on its own when the server says the seat is gone. */
  startHeartbeat(options?: HeartbeatOptions): HeartbeatLoop
  /** Frees this device's seat and forgets the license token. */
  deactivate(): Promise<void>
  /** Stops the heartbeat loops and deactivates (for SIGINT, `beforeunload`, ...). */
  shutdown(): Promise<void>
}

/**
 * Whether another beat cannot succeed after this failure, so the loop stops: every 4xx refusal (the seat is
 * gone, the machine or license is refused, or the request itself is wrong) but 408 and 429, which pass.
 */
const isFinal = (error: LmError): boolean => error.status >= 400 && error.status < 500 && error.status !== 408 && error.status !== 429

const randomNonce = (): string => {
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")
}

const fail = (message: string): LmError => new LmError("verification_failed", 0, message)

const invalidOptions = (message: string): LmError => new LmError("invalid_options", 0, `createLicensedApp: ${message}`)

/**
 * A licensed application for `licenseKey` on the device `fingerprint`. Throws `invalid_options` without
 * `trustedKeys` (unless `trustOnFirstUse`) or with a malformed one.
 */
export const createLicensedApp = (options: LicensedAppOptions): LicensedApp => {
  const pinned = options.trustedKeys
  if (pinned !== undefined) {
    if (options.trustOnFirstUse === true) throw invalidOptions("trustOnFirstUse is for apps without trustedKeys")
    const problem = trustedKeysProblem(pinned)
    if (problem !== undefined) throw invalidOptions(problem)
  } else if (options.trustOnFirstUse !== true) {
    throw invalidOptions(
      "no trustedKeys: pass the public keys of GET /public-key (bundled into the app), or trustOnFirstUse: true to trust the first server that answers"
    )
  }
  if (options.productId !== undefined && !Number.isSafeInteger(options.productId)) throw invalidOptions("productId must be an integer")
  const client = options.client ?? createClient(options)
  const storage = options.storage ?? memoryStorage()
  const licenseKey = normaliseLicenseKey(options.licenseKey)
  const fingerprint = options.fingerprint
  const clock = options.now ?? Date.now
  const seconds = () => Math.floor(clock() / 1000)
  const drift = options.driftSeconds ?? 300
  const stateKey = `state:${licenseKey}`
  const loops = new Set<HeartbeatLoop>()
  let pinnedKeys: Promise<ReadonlyArray<PublishedKey>> | undefined

  const load = async (): Promise<OfflineState> => {
    const text = await storage.get(stateKey)
    if (text === undefined) return {}
    try {
      const parsed: unknown = JSON.parse(text)
      return typeof parsed === "object" && parsed !== null ? parsed as OfflineState : {}
    } catch {
      return {}
    }
  }
  /** Read-modify-write of the state, one at a time (a heartbeat and a validation may overlap). */
  let queue: Promise<unknown> = Promise.resolve()
  const update = (change: (state: OfflineState) => OfflineState | Promise<OfflineState>): Promise<OfflineState> => {
    const next = queue.then(async () => {
      const state = await change(await load())
      await storage.set(stateKey, JSON.stringify(state))
      return state
    })
    queue = next.catch(() => undefined)
    return next
  }

  /**
   * The keys tokens are verified with: the pinned ones; with `trustOnFirstUse`, those kept from the first
   * `/public-key` answer, fetched when none are kept yet (never replaced after that).
   */
  const trustedKeys = async (): Promise<ReadonlyArray<PublishedKey>> => {
    if (pinned !== undefined) {
      pinnedKeys ??= trustedKeySet(pinned).catch((error: unknown) => {
        throw invalidOptions(error instanceof Error ? error.message : String(error))
      })
      return pinnedKeys
    }
    const kept = (await load()).firstUseKeys
    if (kept !== undefined && kept.length > 0) return kept
    const { keys } = await client.publicKeys()
    const state = await update((state) => state.firstUseKeys !== undefined && state.firstUseKeys.length > 0 ? state : { ...state, firstUseKeys: keys })
    return state.firstUseKeys!
  }

  /** Fetches the revocation list, verifies it and keeps it, unless it is older than the one kept (a replay). */
  const fetchCrl = async (keys: ReadonlyArray<PublishedKey>): Promise<void> => {
    const { crl } = await client.crl()
    await update(async (state) => {
      const now = serverTimeOf(state, seconds())
      const verified = await readCrl(crl, keys, { now, driftSeconds: drift })
      if (!verified.ok) throw fail(`the revocation list does not verify (${verified.reason})`)
      if (state.crl !== undefined) {
        const kept = await readCrl(state.crl, keys, { now, driftSeconds: drift })
        if (kept.ok && kept.crl.seq > verified.crl.seq) {
          throw fail(`the revocation list sent (seq ${verified.crl.seq}) is older than the one kept (seq ${kept.crl.seq}): a replay; the kept one stays`)
        }
      }
      return { ...state, crl, crlFetchedAt: now }
    })
  }

  const refresh = async () => {
    await fetchCrl(await trustedKeys())
  }

  const activate = async () => {
    const machine = await client.activate({ ...options.device, license_key: licenseKey, fingerprint })
    await update((state) => ({ ...state, certificate: machine.certificate }))
    return machine
  }

  const validate = async (): Promise<Validation> => {
    const keys = await trustedKeys()
    const nonce = randomNonce()
    const sentAt = clock()
    const response = await client.validate({ license_key: licenseKey, fingerprint, nonce })
    const receivedAt = clock()
    if (response.nonce !== nonce) throw fail("the answer does not echo the nonce sent")
    // The server's clock against this device's, taken at the middle of the round trip; tokens are judged on it.
    const serverTime = Date.parse(response.server_time) / 1000
    if (!Number.isFinite(serverTime)) throw fail("the answer's server_time is not a time")
    const serverOffset = Math.round(serverTime - (sentAt + receivedAt) / 2000)
    const now = Math.floor(receivedAt / 1000) + serverOffset
    const token = response.valid ? response.signed_payload : response.signed_refusal
    if (token === null) throw fail(response.valid ? "a valid answer without a signed payload" : "a refusal without a signed refusal")
    const verified = response.valid
      ? await verifyToken(token, keys, { type: "license", now, driftSeconds: drift })
      : await verifyToken(token, keys, { type: "refusal", now, driftSeconds: drift })
    if (!verified.ok) throw fail(`the signed ${response.valid ? "payload" : "refusal"} does not verify (${verified.reason})`)
    const p = verified.payload
    if (p.nonce !== nonce || p.fp !== fingerprint || p.key !== licenseKey || (p.typ === "license" && p.valid !== true)) {
      throw fail("the signed token is not this answer's (nonce, fingerprint, key or validity differ)")
    }
    // The unsigned server_time counts only as far as it agrees with the signed issue time.
    if (Math.abs(serverTime - p.iat) > drift) throw fail("the answer's server_time is not the time its token was signed")
    const productMismatch = p.typ === "license" && options.productId !== undefined && p.pid !== options.productId
    // A verified answer is the server's time now: it replaces the offset and resets the rollback floor. A
    // refusal ends the offline proof at once; a token of another product is kept (it never entitles here).
    await update(({ licenseToken: _dropped, ...state }) => ({
      ...state,
      ...(response.valid ? { licenseToken: token } : {}),
      serverOffset,
      timeFloor: now
    }))
    await fetchCrl(keys)
    return productMismatch
      ? { valid: false, code: "product_mismatch", needsActivation: false, response }
      : { valid: response.valid, code: response.code, needsActivation: response.needs_activation, response }
  }

  const entitlement = async (): Promise<Entitlement> => {
    let answer: Entitlement | undefined
    const keys = pinned === undefined ? undefined : await trustedKeys()
    await update(async (state) => {
      const checked = await checkEntitlement(state, {
        licenseKey,
        fingerprint,
        keys: keys ?? state.firstUseKeys ?? [],
        ...(options.productId === undefined ? {} : { productId: options.productId }),
        now: seconds(),
        ...(options.driftSeconds === undefined ? {} : { driftSeconds: options.driftSeconds }),
        ...(options.maxCrlAgeSeconds === undefined ? {} : { maxCrlAgeSeconds: options.maxCrlAgeSeconds })
      })
      answer = checked.entitlement
      return { ...state, timeFloor: checked.timeFloor }
    })
    return answer!
  }

  const entitled = async (code: string): Promise<boolean> => {
    const answer = await entitlement()
    return answer.entitled && answer.entitlements.includes(code)
  }

  const startHeartbeat = (settings: HeartbeatOptions = {}): HeartbeatLoop => {
    const minBackoff = settings.minBackoffMs ?? 1_000
    const maxBackoff = settings.maxBackoffMs ?? 60_000
    let timer: ReturnType<typeof setTimeout> | undefined
    let running = true
    let failures = 0
    let resolve!: (stop: HeartbeatStop) => void
    const stopped = new Promise<HeartbeatStop>((r) => void (resolve = r))
    const end = (stop: HeartbeatStop) => {
      if (!running) return
      running = false
      if (timer !== undefined) clearTimeout(timer)
      loops.delete(loop)
      settings.onStop?.(stop)
      resolve(stop)
    }
    const schedule = (ms: number) => {
      if (running) timer = setTimeout(beat, ms)
    }
    const beat = async () => {
      try {
        const answer = await client.heartbeat({ license_key: licenseKey, fingerprint })
        if (!running) return
        failures = 0
        await update((state) => ({ ...state, certificate: answer.certificate }))
        settings.onBeat?.(answer)
        const allowed = Date.parse(answer.next_heartbeat_before) - Date.parse(answer.machine.last_heartbeat_at ?? "")
        schedule(settings.intervalMs ?? (Number.isFinite(allowed) ? Math.max(1_000, allowed / 2) : 60_000))
      } catch (cause) {
        if (!running) return
        const error = cause instanceof LmError ? cause : new LmError("network_error", 0, String(cause))
        if (isFinal(error)) return end({ reason: "refused", code: error.code, error })
        failures += 1
        const retryAfter = typeof error.data["retry_after"] === "number" ? error.data["retry_after"] * 1000 : 0
        const backoff = Math.min(maxBackoff, minBackoff * 2 ** (failures - 1))
        // Up to a quarter of jitter, so that many clients cut off together do not come back together.
        const delay = Math.max(retryAfter, backoff * (0.75 + Math.random() * 0.25))
        settings.onRetry?.(error, delay)
        schedule(delay)
      }
    }
    const loop: HeartbeatLoop = { stop: () => end({ reason: "stopped" }), stopped }
    loops.add(loop)
    void beat()
    return loop
  }

  const deactivate = async () => {
    await client.deactivate({ license_key: licenseKey, fingerprint })
    await update(({ licenseToken: _dropped, certificate: _certificate, ...state }) => state)
  }

  const shutdown = async () => {
    for (const loop of [...loops]) loop.stop()
    await deactivate()
  }

  const checkForUpdate = async (settings: { readonly version?: string; readonly channel?: UpdateCheckInput["channel"] } = {}): Promise<UpdateCheck> => {
    const version = settings.version ?? options.device?.app_version ?? undefined
    if (version === undefined || version === null) throw invalidOptions("checkForUpdate needs the running version (or device.app_version)")
    const answer = await client.checkForUpdate({
      license_key: licenseKey,
      fingerprint,
      version,
      ...(options.productId === undefined ? {} : { product_id: options.productId }),
      ...(settings.channel === undefined ? {} : { channel: settings.channel })
    })
    return toUpdateCheck(answer)
  }

  function download(update: AvailableUpdate): Promise<Blob>
  function download<A>(update: AvailableUpdate, to: DownloadTarget<A>): Promise<A>
  function download(update: AvailableUpdate, to?: DownloadTarget<unknown>): Promise<unknown> {
    return downloadUpdate(update, to ?? blobTarget(update.release?.content_type ?? undefined))
  }

  return {
    licenseKey,
    fingerprint,
    client,
    activate,
    validate,
    refresh,
    entitlement,
    entitled,
    checkForUpdate,
    download,
    startHeartbeat,
    deactivate,
    shutdown
  }
}
