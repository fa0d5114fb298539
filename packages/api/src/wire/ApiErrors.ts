/**
 * The contract's error envelope (CONTRACT §1, §12): one `Schema.Error` class per HTTP status, each encoding
 * exactly `{"success": false, "code", "message", "data": {"status", ...}}` with `data.status` equal to the
 * HTTP status. Domain errors reach it mechanically through {@link fromDomain}; handlers never invent codes.
 */
import { Schema } from "effect"

/** Extra `data.*` members any error may carry beyond the ones its class documents. */
const Extra = [Schema.Record(Schema.String, Schema.Json)] as const

const envelopeFields = <Data extends Schema.Top>(data: Data) => ({
  success: Schema.tag(false),
  code: Schema.String,
  message: Schema.String,
  data
})

const dataOf = <const Status extends number, const Fields extends Schema.Struct.Fields>(
  status: Status,
  fields: Fields
) => Schema.StructWithRest(Schema.Struct({ status: Schema.Literal(status), ...fields }), Extra)

/**
 * The fields and annotations of the envelope error of one HTTP status, written once: the response status and
 * `data.status` are the same number. `fields` are the extra `data.*` members the class documents.
 */
const envelopeError = <const Status extends number, const Fields extends Schema.Struct.Fields>(
  status: Status,
  description: string,
  fields: Fields
) => [envelopeFields(dataOf(status, fields)), { httpApiStatus: status, description }] as const

/** `data.params`: each bad field and what is wrong with it, e.g. `{"license_key": "is required"}`. */
export const Params = Schema.Record(Schema.String, Schema.String)

const RetryAfter = Schema.optionalKey(Schema.Int.annotate({ description: "Seconds to wait; mirrors `Retry-After`." }))
const NullableInt = Schema.optionalKey(Schema.NullOr(Schema.Int))

/** 400: `rest_invalid_json`, `rest_invalid_param` (with `data.params`), `confirmation_required`. */
export class BadRequest extends Schema.Error<BadRequest>("lm/BadRequest")(
  ...envelopeError(400, "The request is malformed or a parameter is invalid.", { params: Schema.optionalKey(Params) })
) {}

/** 401: `rest_unauthorized`; sent with `WWW-Authenticate: Basic realm="lm"`. */
export class Unauthorized extends Schema.Error<Unauthorized>("lm/Unauthorized")(
  ...envelopeError(401, "No or bad API credentials.", {})
) {}

/** 403: `rest_forbidden` (scope or guard veto) and the refusals of a license or machine. */
export class Forbidden extends Schema.Error<Forbidden>("lm/Forbidden")(
  ...envelopeError(403, "The request is refused.", {})
) {}

/** 404: `rest_no_route` and every `*_not_found`. */
export class NotFound extends Schema.Error<NotFound>("lm/NotFound")(
  ...envelopeError(404, "No such route or resource.", {})
) {}

/** 405: `rest_method_not_allowed`; sent with `Allow`. */
export class MethodNotAllowed extends Schema.Error<MethodNotAllowed>("lm/MethodNotAllowed")(
  ...envelopeError(405, "The path exists but not for this method.", {})
) {}

/** 408: `rest_request_timeout` (a body that stopped arriving); sent with `Connection: close`. */
export class RequestTimeout extends Schema.Error<RequestTimeout>("lm/RequestTimeout")(
  ...envelopeError(408, "The request did not arrive in time.", {})
) {}

/** 409: `license_exists`, `release_exists`, `invalid_transition` (with `data.from`, `data.action`), ... */
export class Conflict extends Schema.Error<Conflict>("lm/Conflict")(
  ...envelopeError(409, "The request conflicts with the current state.", {
    from: Schema.optionalKey(Schema.String),
    action: Schema.optionalKey(Schema.String)
  })
) {}

/** 413: `rest_payload_too_large`. */
export class PayloadTooLarge extends Schema.Error<PayloadTooLarge>("lm/PayloadTooLarge")(
  ...envelopeError(413, "The body is larger than 1 MiB.", {})
) {}

/** 415: `rest_unsupported_media_type`. */
export class UnsupportedMediaType extends Schema.Error<UnsupportedMediaType>("lm/UnsupportedMediaType")(
  ...envelopeError(415, "The body is not JSON.", {})
) {}

/** 416: `rest_range_not_satisfiable` (a `Range` past the end of an artifact); sent with a `Content-Range` naming its size. */
export class RangeNotSatisfiable extends Schema.Error<RangeNotSatisfiable>("lm/RangeNotSatisfiable")(
  ...envelopeError(416, "The range is outside the artifact.", {})
) {}

/** 422: `machine_limit_exceeded` with `data.max_activations`, `data.activation_count`, `data.ceiling`. */
export class UnprocessableEntity extends Schema.Error<UnprocessableEntity>("lm/UnprocessableEntity")(
  ...envelopeError(422, "The request is well formed but cannot be carried out.", {
    max_activations: NullableInt,
    activation_count: Schema.optionalKey(Schema.Int),
    ceiling: NullableInt
  })
) {}

/** 429: `rest_rate_limited` with `data.retry_after`; sent with `Retry-After`. */
export class TooManyRequests extends Schema.Error<TooManyRequests>("lm/TooManyRequests")(
  ...envelopeError(429, "Rate limited.", { retry_after: RetryAfter })
) {}

/** 500: `internal_error` with `data.request_id`; the message never carries internals. */
export class InternalError extends Schema.Error<InternalError>("lm/InternalError")(
  ...envelopeError(500, "An internal fault; quote data.request_id when reporting it.", {
    request_id: Schema.optionalKey(Schema.String)
  })
) {}

/** 503: `service_unavailable` with `data.retry_after`; sent with `Retry-After`. */
export class ServiceUnavailable extends Schema.Error<ServiceUnavailable>("lm/ServiceUnavailable")(
  ...envelopeError(503, "The store cannot be reached.", { retry_after: RetryAfter })
) {}

/** The error class for each HTTP status the contract uses. */
export const byStatus = {
  400: BadRequest,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  405: MethodNotAllowed,
  408: RequestTimeout,
  409: Conflict,
  413: PayloadTooLarge,
  415: UnsupportedMediaType,
  416: RangeNotSatisfiable,
  422: UnprocessableEntity,
  429: TooManyRequests,
  500: InternalError,
  503: ServiceUnavailable
} as const

/** The HTTP statuses the contract uses for errors. */
export type Status = keyof typeof byStatus

/** The error class instance for a status. */
export type ForStatus<S extends Status> = InstanceType<(typeof byStatus)[S]>

/** Any envelope error. */
export type ApiError = ForStatus<Status>

/** Every envelope error class, e.g. for an endpoint that may fail with any of them. */
export const all = Object.values(byStatus)

/** The wire form of an envelope error. */
export interface Envelope {
  readonly success: false
  readonly code: string
  readonly message: string
  readonly data: { readonly status: number; readonly [key: string]: unknown }
}

const apiErrorClasses: ReadonlySet<unknown> = new Set(all)

/** Whether a value is one of the envelope error classes. */
export const isApiError = (u: unknown): u is ApiError =>
  typeof u === "object" && u !== null && apiErrorClasses.has(u.constructor)

/** Whether a status has an envelope error class. */
export const isStatus = (status: number): status is Status => Object.hasOwn(byStatus, status)

/**
 * Makes the envelope error for a status. `extra` becomes `data.*` next to `data.status`; members that are
 * `undefined` are left out. An unknown status becomes a 500 `internal_error`.
 */
export const make = <S extends Status>(
  status: S,
  code: string,
  message: string,
  extra?: Readonly<Record<string, unknown>>
): ForStatus<S> => {
  const data: Record<string, unknown> = {}
  if (extra !== undefined) {
    for (const key in extra) {
      if (extra[key] !== undefined) data[key] = extra[key]
    }
  }
  data.status = status
  const ErrorClass = byStatus[status] as unknown as new(
    props: unknown,
    options: { readonly disableChecks: true }
  ) => ForStatus<S>
  try {
    return new ErrorClass({ success: false, code, message, data }, { disableChecks: true })
  } catch {
    // An extra field that is not plain JSON (a Date, a class instance): keep its JSON form.
    const json = JSON.parse(JSON.stringify(data)) as Record<string, unknown>
    return new ErrorClass({ success: false, code, message, data: json }, { disableChecks: true })
  }
}

/**
 * What the HTTP layer needs from a domain error: its contract `code`, its HTTP `status`, a `message`, and
 * optionally extra fields (`from`, `action`, `max_activations`, `params`, ...) that become `data.*`.
 */
export interface DomainErrorLike {
  readonly code: string
  readonly status: number
  readonly message: string
}

/** Whether a value looks like a domain error (has a string `code` and a numeric `status`). */
export const isDomainErrorLike = (u: unknown): u is DomainErrorLike =>
  typeof u === "object" && u !== null && typeof (u as DomainErrorLike).code === "string" &&
  typeof (u as DomainErrorLike).status === "number"

/** The envelope error class a domain error maps to, computed from its `status` type. */
export type FromDomain<E> = E extends { readonly status: infer S } ? S extends Status ? ForStatus<S> : ApiError
  : never

/** Own fields of an error object that are not `data.*`. */
const notData = new Set(["_tag", "code", "status", "message", "name", "stack", "cause", "success"])

/**
 * Maps a domain error to the envelope mechanically: `code`, `status` and `message` are kept; every other own
 * field becomes `data.*`. A status the contract does not list becomes 500 `internal_error`.
 *
 * Use in handlers as `Effect.mapError(ApiErrors.fromDomain)`.
 */
export const fromDomain = <E extends DomainErrorLike>(error: E): FromDomain<E> => {
  if (!isStatus(error.status)) {
    return make(500, "internal_error", "An internal error occurred.") as FromDomain<E>
  }
  const extra: Record<string, unknown> = {}
  for (const key of Object.keys(error)) {
    if (!notData.has(key)) extra[key] = (error as unknown as Record<string, unknown>)[key]
  }
  return make(error.status, error.code, error.message, extra) as FromDomain<E>
}

/** An error a request may be answered with: an envelope error, or a domain error that {@link toApiError} maps. */
export type AnyError = ApiError | DomainErrorLike

/** An envelope error as it is; a domain error through {@link fromDomain}. */
export const toApiError = (error: AnyError): ApiError => (isApiError(error) ? error : fromDomain(error))

/** The wire body of an envelope error. */
export const toEnvelope = (error: ApiError): Envelope => ({
  success: false,
  code: error.code,
  message: error.message,
  data: error.data
})
