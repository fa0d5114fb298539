/** The access feature's errors (CONTRACT §11, §12): credentials, scopes, rate limits. */
import { Schema } from "effect"

export class ApiKeyNotFound extends Schema.TaggedError<ApiKeyNotFound>()("ApiKeyNotFound", {
  message: Schema.String
}) {
  readonly code = "api_key_not_found"
  readonly status = 404
}

/** Missing or wrong API credentials (401). */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  message: Schema.String
}) {
  readonly code = "rest_unauthorized"
  readonly status = 401
}

/** Right credentials, but the scope or a guard forbids the request (403). */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: Schema.String
}) {
  readonly code = "rest_forbidden"
  readonly status = 403
}

/** A request over a rate limit (CONTRACT §11): 429, `retry_after` whole seconds (also sent as `Retry-After`). */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  message: Schema.String,
  retry_after: Schema.Int
}) {
  readonly code = "rest_rate_limited"
  readonly status = 429
}
export const rateLimited = (retryAfterSeconds: number) =>
  new RateLimited({ message: "Too many requests; try again later.", retry_after: retryAfterSeconds })
