/** The idempotency feature's errors (CONTRACT §12, §16). */
import { Schema } from "effect"

/** The first request with this idempotency key is still running (409). */
export class IdempotencyKeyInUse extends Schema.TaggedError<IdempotencyKeyInUse>()("IdempotencyKeyInUse", {
  message: Schema.String
}) {
  readonly code = "idempotency_key_in_use"
  readonly status = 409
}

/** The idempotency key was used with another request (method, path or body) (422). */
export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", {
  message: Schema.String
}) {
  readonly code = "idempotency_key_reused"
  readonly status = 422
}
