/**
 * A test-only API that exercises the adapter's infrastructure before the domain's routes exist: the real
 * `system` group plus public `echo` routes and key-protected `admin` routes. It is also the template for adding
 * a group: define it, `.add` it before `.prefix`/`.middleware`, implement it with `HttpApiBuilder.group`.
 */
import { Effect, Layer, Schema } from "effect"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { apiPath, parseOptions, strictPayloadOptions } from "@lm/api"
import { Authentication, CurrentApiKey } from "@lm/api"
import { ErrorEnvelope } from "@lm/api"
import { SystemGroup } from "@lm/api"
import { ApiErrors } from "@lm/api"
import { ok, Success } from "@lm/api"
import { currentRequestId } from "../../src/server/Routing.js"

const LicenseKey = Schema.String.check(Schema.isPattern(/^[A-Z0-9]{4}(-[A-Z0-9]{4}){3}$/, { message: "is not a license key" }))

/** A client payload: unknown fields are ignored, as on the public routes. */
const EchoPayload = Schema.Struct({
  license_key: LicenseKey,
  fingerprint: Schema.optionalKey(Schema.String.check(Schema.isBetweenLength(1, 255))),
  count: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)))
})

/** A domain error of the shape the domain's errors have: `code` and `status` beside the schema fields. */
export class FakeTransitionError extends Schema.TaggedError<FakeTransitionError>()("FakeTransitionError", {
  message: Schema.String,
  from: Schema.String,
  action: Schema.String
}) {
  readonly code = "invalid_transition"
  readonly status = 409
}

/** The store-down error of the domain (`service_unavailable`, 503). */
export class FakeStorageUnavailable extends Schema.TaggedError<FakeStorageUnavailable>()("FakeStorageUnavailable", {
  message: Schema.String
}) {
  readonly code = "service_unavailable"
  readonly status = 503
}

/** Public routes. */
export class EchoGroup extends HttpApiGroup.make("echo")
  .add(
    HttpApiEndpoint.post("echo", "/echo", { payload: EchoPayload, success: Success(EchoPayload) }),
    HttpApiEndpoint.post("touch", "/echo/touch", {
      payload: Schema.Struct({ note: Schema.optionalKey(Schema.String) }),
      success: Success(Schema.Struct({ note: Schema.NullOr(Schema.String), request_id: Schema.String }))
    }),
    HttpApiEndpoint.get("list", "/echo/list", {
      query: { page: Schema.optionalKey(Schema.FiniteFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(1))) },
      success: Success(Schema.Struct({ page: Schema.Number }))
    }),
    HttpApiEndpoint.post("transition", "/echo/transition", {
      success: Success(Schema.Struct({})),
      error: ApiErrors.Conflict
    }),
    HttpApiEndpoint.get("unavailable", "/echo/unavailable", { success: Success(Schema.Struct({})) }),
    HttpApiEndpoint.get("defect", "/echo/defect", { success: Success(Schema.Struct({})) }),
    HttpApiEndpoint.get("slow", "/echo/slow", {
      query: { ms: Schema.FiniteFromString },
      success: Success(Schema.Struct({ slept: Schema.Number }))
    })
  ) {}

/** Key-protected routes, rejecting unknown body fields like every management write. */
export class AdminGroup extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.get("read", "/admin/echo", { success: Success(Schema.Struct({ key_id: Schema.Number })) }),
    HttpApiEndpoint.post("write", "/admin/echo", {
      payload: Schema.Struct({ description: Schema.String }),
      success: Success(Schema.Struct({ key_id: Schema.Number, description: Schema.String }))
    }),
    // An OPTIONS route behind the middleware, to show which scopes may send it (a read).
    HttpApiEndpoint.options("probe", "/admin/probe", { success: Success(Schema.Struct({ key_id: Schema.Number })) })
  )
  .middleware(Authentication)
  .annotate(HttpApi.PayloadParseOptions, strictPayloadOptions) {}

/** The API under test. Same id as the real `Api`, so the real `system` handlers serve it too. */
export class EchoApi extends HttpApi.make("lm")
  .add(SystemGroup)
  .add(EchoGroup)
  .add(AdminGroup)
  .prefix(apiPath)
  .middleware(ErrorEnvelope)
  .annotate(HttpApi.ParseOptions, parseOptions)
{}

/** The `echo` handlers. */
export const EchoHandlers = HttpApiBuilder.group(EchoApi, "echo", (handlers) =>
  handlers.handleAll({
    echo: ({ payload }) => Effect.succeed(ok(payload)),
    touch: ({ payload }) => Effect.map(currentRequestId, (requestId) => ok({ note: payload.note ?? null, request_id: requestId })),
    list: ({ query }) => Effect.succeed(ok({ page: query.page ?? 1 })),
    transition: () =>
      Effect.fail(new FakeTransitionError({ message: "Cannot reinstate a license that is active.", from: "active", action: "reinstate" }))
        .pipe(Effect.mapError(ApiErrors.fromDomain)),
    unavailable: () =>
      Effect.fail(new FakeStorageUnavailable({ message: "The store cannot be reached." })).pipe(
        Effect.mapError(ApiErrors.fromDomain)
      ),
    defect: () => Effect.die(new Error("secret internals: connection string postgres://user:pw@db")),
    slow: ({ query }) =>
      Effect.logInfo("slow request started").pipe(
        Effect.andThen(Effect.sleep(query.ms)),
        Effect.as(ok({ slept: query.ms }))
      )
  }))

/** The `admin` handlers. */
export const AdminHandlers = HttpApiBuilder.group(EchoApi, "admin", (handlers) =>
  handlers.handleAll({
    read: () => Effect.map(Effect.service(CurrentApiKey), (key) => ok({ key_id: key.id })),
    probe: () => Effect.map(Effect.service(CurrentApiKey), (key) => ok({ key_id: key.id })),
    write: ({ payload }) =>
      Effect.map(Effect.service(CurrentApiKey), (key) => ok({ key_id: key.id, description: payload.description }))
  }))

/** Both test groups. */
export const TestHandlers = Layer.mergeAll(EchoHandlers, AdminHandlers)
