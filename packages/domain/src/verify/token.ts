/**
 * The parts of token verification that do not depend on how the signature is checked:
 * splitting and decoding a compact token, and the time checks (expiry, issue time in the
 * future, clock roll-back). Shared by the client verifier (`verify/index.ts`) and the server's
 * `Signer`. Portable: no node: modules, no effect.
 *
 * @since 0.1.0
 */
import { base64UrlDecode, utf8Decode, utf8Encode } from "./encoding.js"
import { type TokenPayload, tokenTypes, tokenTypesWithoutExp } from "./payloads.js"

/** Why a token was refused. */
export type VerifyFailure =
  /** Not a token: wrong shape, bad encoding, not JSON, or missing `v`/`typ`/`kid`/`iat`/`exp`. */
  | "malformed"
  /** No accepted public key has the payload's `kid`. */
  | "unknown_kid"
  /** The Ed25519 signature does not match. */
  | "bad_signature"
  /** A valid token of another `typ` than the one asked for. */
  | "wrong_type"
  /** `exp` has passed. */
  | "expired"
  /** `iat` lies further in the future than the allowed clock drift. */
  | "not_yet_valid"
  /** The local clock is behind the time floor by more than the allowed drift. */
  | "clock_rollback"

/** Default allowed clock drift between client and server: 5 minutes. */
export const DEFAULT_DRIFT_SECONDS = 300

/**
 * A monotonic lower bound for "now" (unix seconds) against clock roll-back. A client persists
 * `value` between runs (e.g. next to its cached token) and restores it with `new TimeFloor(saved)`.
 * Verification raises it to the local time of each check and the `iat` (server time) of each
 * accepted token; it never goes down.
 */
export class TimeFloor {
  #value: number

  constructor(value = 0) {
    this.#value = Number.isFinite(value) ? value : 0
  }

  /** The floor, in unix seconds. */
  get value(): number {
    return this.#value
  }

  /** Raises the floor to `seconds` if that is higher. */
  observe(seconds: number): void {
    if (Number.isFinite(seconds) && seconds > this.#value) this.#value = seconds
  }

  /** Serialises as the bare number, so `JSON.stringify` persists it directly. */
  toJSON(): number {
    return this.#value
  }
}

/** A token split into its parts; the payload is decoded but NOT yet verified. */
export interface DecodedToken {
  /** The ASCII bytes of the first part: what the signature covers. */
  readonly message: Uint8Array
  readonly payload: TokenPayload
  readonly signature: Uint8Array
}

const TYPES: ReadonlySet<string> = new Set(tokenTypes)
const EXPIRELESS: ReadonlySet<string> = new Set(tokenTypesWithoutExp)

const isSeconds = (u: unknown): u is number => typeof u === "number" && Number.isSafeInteger(u)

/**
 * Splits and decodes a compact token. Returns `undefined` unless it is two canonical base64url
 * parts, the first a UTF-8 JSON object with `v: 1`, a known `typ`, a string `kid`, an integer
 * `iat` (and `exp`, for every type but those of `tokenTypesWithoutExp`), the second 64 bytes.
 */
export const decodeToken = (token: unknown): DecodedToken | undefined => {
  if (typeof token !== "string") return undefined
  const dot = token.indexOf(".")
  if (dot <= 0 || dot !== token.lastIndexOf(".") || dot === token.length - 1) return undefined
  const head = token.slice(0, dot)
  const headBytes = base64UrlDecode(head)
  const signature = base64UrlDecode(token.slice(dot + 1))
  if (headBytes === undefined || signature === undefined || signature.length !== 64) return undefined
  const json = utf8Decode(headBytes)
  if (json === undefined) return undefined
  let payload: unknown
  try {
    payload = JSON.parse(json)
  } catch {
    return undefined
  }
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return undefined
  const p = payload as Record<string, unknown>
  if (p["v"] !== 1 || typeof p["typ"] !== "string" || !TYPES.has(p["typ"]) || typeof p["kid"] !== "string") {
    return undefined
  }
  if (!isSeconds(p["iat"]) || (!EXPIRELESS.has(p["typ"]) && !isSeconds(p["exp"]))) return undefined
  // The first part is base64url, hence ASCII: its UTF-8 bytes are its ASCII bytes.
  return { message: utf8Encode(head), payload: p as unknown as TokenPayload, signature }
}

/** Options for the time checks. */
export interface TimeOptions {
  /** The local time in unix seconds; defaults to the system clock. */
  readonly now?: number
  /** Allowed clock drift in seconds (default 300). */
  readonly driftSeconds?: number
  /** A persisted floor against clock roll-back; raised on each check. */
  readonly floor?: TimeFloor
}

/**
 * Time checks of a payload whose signature is already verified, in this order: clock roll-back
 * (local time below `floor - drift`), then, taking `max(local time, floor)` as now, an `iat`
 * beyond `now + drift` and an `exp` before now. Raises the floor to the local time (unless it
 * rolled back) and, when the token passes, to its `iat`.
 */
export const checkTimes = (
  payload: { readonly iat: number; readonly exp?: number },
  localNow: number,
  options: Omit<TimeOptions, "now"> = {}
): "expired" | "not_yet_valid" | "clock_rollback" | undefined => {
  const drift = options.driftSeconds ?? DEFAULT_DRIFT_SECONDS
  const floor = options.floor
  if (floor !== undefined && localNow < floor.value - drift) return "clock_rollback"
  floor?.observe(localNow)
  const now = Math.max(localNow, floor?.value ?? localNow)
  if (payload.iat > now + drift) return "not_yet_valid"
  if (payload.exp !== undefined && now > payload.exp) return "expired"
  floor?.observe(payload.iat)
  return undefined
}

/** The system clock in unix seconds. */
export const systemSeconds = (): number => Math.floor(Date.now() / 1000)
