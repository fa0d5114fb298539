/** The idempotency feature's records (CONTRACT §16): the first answer to a management POST, kept per API key and key. */

/** An answer as it was sent: what a repeat gets again. */
export interface IdempotentAnswer {
  readonly status: number
  /** The response body, as sent (UTF-8 text). */
  readonly body: string
  readonly contentType: string
}

/** Which request first used an idempotency key of an API key, and its answer once it has one. */
export interface IdempotencyRecord {
  readonly apiKeyId: number
  readonly key: string
  /** A digest of the method, path and body: a repeat must carry the same. */
  readonly requestHash: string
  /** `null` while the first request is still running. */
  readonly answer: IdempotentAnswer | null
  /** When the record stops counting (epoch ms): the end of the 24 h once answered, the running lease before. */
  readonly expiresAt: number
}

/** A claim of an idempotency key for a request about to run. */
export interface IdempotencyClaim {
  readonly apiKeyId: number
  readonly key: string
  readonly requestHash: string
  /** Until when the claim holds while its request runs (epoch ms). */
  readonly runningUntil: number
}
