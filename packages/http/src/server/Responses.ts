/**
 * Writes envelope errors as HTTP responses, with the headers the contract asks for: `WWW-Authenticate` on
 * 401, `Retry-After` (mirroring `data.retry_after`) on 429 and 503, `Allow` on 405.
 */
import { HttpServerResponse } from "effect/http"
import { ApiErrors } from "@lm/api"

/** The challenge sent with every 401. */
export const wwwAuthenticate = `Basic realm="lm"`

/** Seconds a client is told to wait when the error does not say (503 from an unreachable store). */
export const defaultRetryAfterSeconds = 5

/**
 * The HTTP response for an envelope error, or for a domain error (its envelope error by `ApiErrors.fromDomain`:
 * this is where every domain error a request fails with becomes its answer). `data.status` is the status;
 * nothing else decides it.
 */
export const errorResponse = (
  refusal: ApiErrors.AnyError,
  headers?: Readonly<Record<string, string>>
): HttpServerResponse.HttpServerResponse => {
  const error = ApiErrors.toApiError(refusal)
  const status = error.data.status
  const out: Record<string, string> = { ...headers }
  let body = ApiErrors.toEnvelope(error)
  if (status === 401) out["www-authenticate"] = wwwAuthenticate
  if (status === 429 || status === 503) {
    let retryAfter = body.data.retry_after
    if (typeof retryAfter !== "number") {
      retryAfter = defaultRetryAfterSeconds
      body = { ...body, data: { ...body.data, retry_after: retryAfter } }
    }
    out["retry-after"] = String(retryAfter)
  }
  // The rest of an oversized body is not read, so the connection cannot carry another request.
  if (status === 413) out.connection = "close"
  return HttpServerResponse.text(JSON.stringify(body), { status, headers: out, contentType: "application/json" })
}

/** The HTTP response for a status, code and message, e.g. `envelope(404, "rest_no_route", "...")`. */
export const envelope = (
  status: ApiErrors.Status,
  code: string,
  message: string,
  extra?: Readonly<Record<string, unknown>>,
  headers?: Readonly<Record<string, string>>
): HttpServerResponse.HttpServerResponse => errorResponse(ApiErrors.make(status, code, message, extra), headers)
