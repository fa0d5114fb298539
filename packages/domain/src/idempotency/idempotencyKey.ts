/**
 * The rules of idempotent management writes (CONTRACT §16), pure: which keys are accepted, how long an answer is
 * kept, and what a request whose key is already held gets.
 */
import type { IdempotencyRecord, IdempotentAnswer } from "./model.js"

/** The header that carries the key. */
export const header = "Idempotency-Key"

/** 1–255 printable ASCII characters. */
export const keyPattern = /^[\x20-\x7e]{1,255}$/

/** How long a first answer is kept and replayed: 24 hours. */
export const retentionMillis = 24 * 60 * 60 * 1000

/**
 * How long a claim holds while its request runs. A process that dies mid-request leaves its claim behind; after
 * this the key may be used again (a request that still runs this long has been given up by its client anyway).
 */
export const runningLeaseMillis = 5 * 60 * 1000

/** Whether an answer is kept for repeats: a fault of the server (5xx) is not, so that a retry may succeed. */
export const keeps = (answer: IdempotentAnswer): boolean => answer.status < 500

/** What a request gets when its key is already held by `record`. */
export type Held =
  | { readonly _tag: "Replay"; readonly answer: IdempotentAnswer }
  | { readonly _tag: "Reused" }
  | { readonly _tag: "InUse" }

/**
 * A request with another method, path or body is `Reused` (422), whether or not the first has its answer yet; the
 * same request is `InUse` (409) while the first runs and gets the first answer again (`Replay`) once it has one.
 */
export const held = (record: IdempotencyRecord, requestHash: string): Held =>
  record.requestHash !== requestHash
    ? { _tag: "Reused" }
    : record.answer === null
    ? { _tag: "InUse" }
    : { _tag: "Replay", answer: record.answer }
