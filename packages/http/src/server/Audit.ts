/**
 * What the audit log records of a management write over HTTP (CONTRACT §18), for the `Authentication`
 * middleware, the one place every management request passes: the actor (the API key), the client IP, the action
 * (`<target type>.<endpoint>`, e.g. `license.revoke`, `api_key.create`), the target (its type from the group, its
 * id from the path; for a create, from the answer), the request id, and how the write ended (the answer's
 * status, or the refusal's as `ErrorEnvelope` answers it). The domain's `AuditLog.audited` writes the entry.
 */
import type { Services } from "@lm/domain"
import { Exit } from "effect"
import type { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import type { HttpServerResponse } from "effect/http/HttpServerResponse"
import { refusalStatusOf } from "./ErrorEnvelope.js"

/** Methods that write: the audit log records requests with these. */
export const isWriteMethod = (method: string): boolean => method !== "GET" && method !== "HEAD" && method !== "OPTIONS"

/** The target type of a group's writes: its name in the singular, in snake case (`api-keys` → `api_key`). */
export const targetTypeOf = (group: string): string => group.replace(/-/g, "_").replace(/ies$/, "y").replace(/s$/, "")

/** The path without its query, as segments. */
const segmentsOf = (path: string) => path.split("?")[0]!.split("/").filter((s) => s !== "")

/**
 * The value of the first path parameter of `template` (`/licenses/:key/revoke`) in `url`, the two aligned on
 * their last segments (the url carries the rest root before the API's path); a license key as matched (trimmed,
 * upper-cased).
 */
export const firstPathParam = (template: string, url: string, targetType: string): string | null => {
  const names = segmentsOf(template)
  const values = segmentsOf(url)
  const offset = values.length - names.length
  const at = names.findIndex((name) => name.startsWith(":"))
  if (at < 0 || offset < 0) return null
  let value: string
  try {
    value = decodeURIComponent(values[offset + at]!)
  } catch {
    return null
  }
  return targetType === "license" ? value.trim().toUpperCase() : value
}

/** The status an endpoint's success answers (its `HttpApiSchema.status` annotation; 200 by default). */
export const successStatusOf = (endpoint: HttpApiEndpoint.Top): number => {
  for (const schema of endpoint.success) {
    const ast = schema.ast as { readonly annotations?: { readonly httpApiStatus?: unknown }; readonly context?: { readonly annotations?: { readonly httpApiStatus?: unknown } } }
    const status = ast.annotations?.httpApiStatus ?? ast.context?.annotations?.httpApiStatus
    if (typeof status === "number") return status
  }
  return 200
}

/** The write a management request makes, as the audit log records it. */
export const auditedWriteOf = (options: {
  readonly endpoint: HttpApiEndpoint.Top
  readonly group: HttpApiGroup.Top
  readonly url: string
  readonly key: { readonly id: number; readonly truncatedKey: string }
  readonly ip: string | undefined
  readonly requestId: string
}): Services.AuditedWrite => {
  const type = targetTypeOf(options.group.identifier)
  return {
    actor: { type: "api_key", apiKeyId: options.key.id, truncatedKey: options.key.truncatedKey },
    ip: options.ip ?? null,
    action: `${type}.${options.endpoint.identifier}`,
    target: { type, id: firstPathParam(options.endpoint.path, options.url, type) },
    requestId: options.requestId === "" ? null : options.requestId,
    successStatus: successStatusOf(options.endpoint)
  }
}

/** The id a created target has in the answer's envelope: `data.license_key` for a license, else `data.id`. */
const createdIdOf = (response: HttpServerResponse, targetType: string): string | null => {
  if (response.body._tag !== "Uint8Array") return null
  try {
    const data = (JSON.parse(new TextDecoder().decode(response.body.body)) as { data?: Record<string, unknown> }).data
    const id = data?.[targetType === "license" ? "license_key" : "id"]
    return typeof id === "string" || typeof id === "number" ? String(id) : null
  } catch {
    return null
  }
}

/** HttpApiBuilder wraps what a handler fails with in an object holding it as `error` and tagged with this key. */
const handlerErrorKey = "~effect/http-api/HttpApiBuilder/HandlerError"

/** The status a refusal is answered with (`refusalStatusOf`), the handler's failure unwrapped. */
const refusalStatus = (failure: unknown): number =>
  refusalStatusOf(
    typeof failure === "object" && failure !== null && handlerErrorKey in failure
      ? (failure as unknown as { readonly error: unknown }).error
      : failure
  )

/** How a management request ended, for `AuditLog.audited`. */
export const outcomeOf = (targetType: string) => (exit: Exit.Exit<HttpServerResponse, unknown>): Services.AuditOutcome => {
  if (Exit.isSuccess(exit)) return { status: exit.value.status, targetId: createdIdOf(exit.value, targetType) }
  const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  return { status: error === undefined ? 500 : refusalStatus(error.error) }
}
