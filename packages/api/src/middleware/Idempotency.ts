/**
 * Idempotent management writes (CONTRACT §16): a management POST may carry `Idempotency-Key`; its first answer is
 * kept for 24 h per API key and replayed with `Idempotent-Replayed: true`. Add it to a management group before
 * {@link Authentication} (`.middleware(Idempotency).middleware(Authentication)`): it runs inside authentication,
 * with the request's API key. Implementation: `server/Idempotency.ts` in `@lm/http`.
 */
import { HttpApiMiddleware } from "effect/http-api"
import { BadRequest, Conflict, ServiceUnavailable, UnprocessableEntity } from "../wire/ApiErrors.js"
import type { CurrentApiKey } from "./Authentication.js"

/** The idempotency middleware: 409 `idempotency_key_in_use`, 422 `idempotency_key_reused`, 400 for a malformed key. */
export class Idempotency extends HttpApiMiddleware.Service<Idempotency, { requires: CurrentApiKey }>()(
  "lm/http/Idempotency",
  { error: [BadRequest, Conflict, UnprocessableEntity, ServiceUnavailable] }
) {}
