/**
 * Helpers for a licensed application: activate this device, validate online (with a random nonce whose echo
 * and signature are checked), keep the offline proof in storage, a heartbeat loop with backoff that renews a
 * floating lease and stops (saying why) when the seat is gone, and deactivate on shutdown.
 */
import { normaliseLicenseKey, type PublishedKey, readCrl, verifyToken } from "@lm/domain/verify"
import type { ConnectionOptions } from "./api.js"
import {
  type ActivatedMachine,
  type ActivateInput,
  createClient,
  type HeartbeatResponse,
  type LmClient,
  type ValidateResponse
} from "./client.js"
import { checkEntitlement, type Entitlement, type OfflineState } from "./entitlement.js"
import { LmError } from "./errors.js"
import { memoryStorage, type Storage } from "./storage.js"

/** Settings of {@link createLicensedApp}. */
export interface LicensedAppOptions extends ConnectionOptions {
  /** The license key as the user typed it: trimmed and upper-cased as the server does. */
  readonly licenseKey: string
  /** This device's fingerprint (in Node: `machineFingerprint` from `@lm/client/node`). */
  readonly fingerprint: string
  /** Where the offline proof is kept (default: in memory). */
  readonly storage?: Storage
  /** What `activate` reports about this device: `name`, `hostname`, `platform`, `app_version`, `components`, `meta`. */
  readonly device?: Omit<ActivateInput, "license_key" | "fingerprint">
  /** The clock, epoch milliseconds (default `Date.now`); tests inject one. */
  readonly now?: () => number
  /** Tolerated clock difference with the server, seconds (default 300). */
  readonly driftSeconds?: number
  /** The oldest revocation list `entitlement()` accepts, seconds (default 7 days). */
  readonly maxCrlAgeSeconds?: number
  /** An existing client (default: one made from the connection options). */
  readonly client?: LmClient
}

/** The outcome of an online validation, after its signature and nonce checked out. */
export interface Validation {
  readonly valid: boolean
  /** `valid`, or the server's refusal code (`license_suspended`, `fingerprint_not_activated`, ...). */
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
   * Validates online with a fresh random nonce, after fetching the public keys; checks the nonce echo and the
   * signature of the answer, keeps the license token when valid (drops it on a refusal), and fetches the
   * revocation list. Rejects with `verification_failed` when the answer does not verify.
   */
  validate(): Promise<Validation>
  /** Fetches the public keys and the revocation list (no validation). */
  refresh(): Promise<void>
  /** The offline answer from storage alone (see `entitlement.ts`). Raises and keeps the time floor. */
  entitlement(): Promise<Entitlement>
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

/** A licensed application for `licenseKey` on the device `fingerprint`. */
export const createLicensedApp = (options: LicensedAppOptions): LicensedApp => {
  const client = options.client ?? createClient(options)
  const storage = options.storage ?? memoryStorage()
  const licenseKey = normaliseLicenseKey(options.licenseKey)
  const fingerprint = options.fingerprint
  const clock = options.now ?? Date.now
  const seconds = () => Math.floor(clock() / 1000)
  const stateKey = `state:${licenseKey}`
  const loops = new Set<HeartbeatLoop>()

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

  const fetchKeys = async (): Promise<ReadonlyArray<PublishedKey>> => {
    const { keys } = await client.publicKeys()
    await update((state) => ({ ...state, keys }))
    return keys
  }

  const fetchCrl = async (keys: ReadonlyArray<PublishedKey>): Promise<void> => {
    const { crl } = await client.crl()
    const verified = await readCrl(crl, keys, { now: seconds(), driftSeconds: options.driftSeconds ?? 300 })
    if (!verified.ok) throw fail(`the revocation list does not verify (${verified.reason})`)
    await update(async (state) => {
      // Never replace a list with an older one (a replay).
      if (state.crl !== undefined) {
        const stored = await readCrl(state.crl, keys, { now: seconds(), driftSeconds: options.driftSeconds ?? 300 })
        if (stored.ok && stored.crl.seq > verified.crl.seq) return state
      }
      return { ...state, crl, crlFetchedAt: seconds() }
    })
  }

  const refresh = async () => {
    await fetchCrl(await fetchKeys())
  }

  const activate = async () => {
    const machine = await client.activate({ ...options.device, license_key: licenseKey, fingerprint })
    await update((state) => ({ ...state, certificate: machine.certificate }))
    return machine
  }

  const validate = async (): Promise<Validation> => {
    let keys = await fetchKeys()
    const nonce = randomNonce()
    const response = await client.validate({ license_key: licenseKey, fingerprint, nonce })
    if (response.nonce !== nonce) throw fail("the answer does not echo the nonce sent")
    const now = seconds()
    const drift = options.driftSeconds ?? 300
    if (response.valid) {
      const token = response.signed_payload
      if (token === null) throw fail("a valid answer without a signed payload")
      let verified = await verifyToken(token, keys, { type: "license", now, driftSeconds: drift })
      if (!verified.ok && verified.reason === "unknown_kid") {
        // The server rotated its key between the two requests: its new key is published by now.
        keys = await fetchKeys()
        verified = await verifyToken(token, keys, { type: "license", now, driftSeconds: drift })
      }
      if (!verified.ok) throw fail(`the signed payload does not verify (${verified.reason})`)
      const p = verified.payload
      if (p.nonce !== nonce || p.fp !== fingerprint || p.key !== licenseKey || p.valid !== true) {
        throw fail("the signed payload is not this answer's (nonce, fingerprint, key or validity differ)")
      }
      await update((state) => ({ ...state, licenseToken: token }))
    } else {
      const token = response.signed_refusal
      if (token !== null) {
        const verified = await verifyToken(token, keys, { type: "refusal", now, driftSeconds: drift })
        if (!verified.ok || verified.payload.nonce !== nonce) throw fail("the signed refusal does not verify")
      }
      // A refusal ends the offline proof at once.
      await update(({ licenseToken: _dropped, ...state }) => state)
    }
    await fetchCrl(keys)
    return { valid: response.valid, code: response.code, needsActivation: response.needs_activation, response }
  }

  const entitlement = async (): Promise<Entitlement> => {
    let answer: Entitlement | undefined
    await update(async (state) => {
      const checked = await checkEntitlement(state, {
        licenseKey,
        fingerprint,
        now: seconds(),
        ...(options.driftSeconds === undefined ? {} : { driftSeconds: options.driftSeconds }),
        ...(options.maxCrlAgeSeconds === undefined ? {} : { maxCrlAgeSeconds: options.maxCrlAgeSeconds })
      })
      answer = checked.entitlement
      return { ...state, timeFloor: checked.timeFloor }
    })
    return answer!
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

  return { licenseKey, fingerprint, client, activate, validate, refresh, entitlement, startHeartbeat, deactivate, shutdown }
}
