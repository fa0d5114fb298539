/**
 * The handlers of one group of the API, as `HttpApiBuilder.group` builds them, except that a handler may fail
 * with the domain's own errors: the `ErrorEnvelope` middleware, around every endpoint, writes each as the
 * envelope with `ApiErrors.fromDomain` (the one place a domain error becomes an envelope error), so a handler
 * is one domain call and one mapper, with no error mapping of its own. The types still check that a handler
 * fails only with errors whose HTTP status its endpoint declares (so the OpenAPI document lists every answer).
 */
import type { Layer, Scope } from "effect"
import { type HttpApi, HttpApiBuilder, type HttpApiEndpoint, type HttpApiGroup } from "effect/http-api"

/** The HTTP statuses an endpoint declares: its own errors' and its middlewares'. */
type DeclaredStatus<Endpoint extends HttpApiEndpoint.Constraint> =
  Endpoint["~Error"]["Type"] | HttpApiEndpoint.MiddlewareError<Endpoint> extends infer Declared
    ? Declared extends { readonly data: { readonly status: infer Status } } ? Status : never
    : never

/** A domain error (`Schema.TaggedError` with its contract `code` and HTTP `status`) of one of these statuses. */
interface DomainError<Status> {
  readonly code: string
  readonly status: Status
  readonly message: string
}

/** The endpoint, whose handler may also fail with the domain errors of the statuses it declares. */
type WithDomainErrors<Endpoint extends HttpApiEndpoint.Constraint> = Omit<Endpoint, "~Error"> & {
  readonly "~Error": Omit<Endpoint["~Error"], "Type"> & {
    readonly Type: Endpoint["~Error"]["Type"] | DomainError<DeclaredStatus<Endpoint>>
  }
}

/** Every endpoint of a group, by identifier, as {@link WithDomainErrors}. */
type DomainEndpoints<Endpoints extends Record<string, HttpApiEndpoint.Constraint>> = {
  readonly [Identifier in keyof Endpoints]: WithDomainErrors<Endpoints[Identifier]>
}

/** The handlers `build` receives: `handle`, `handleAll` and `handleRaw` as `HttpApiBuilder`'s. */
export type DomainHandlers<Group extends HttpApiGroup.Constraint> = HttpApiBuilder.Handlers<
  never,
  DomainEndpoints<Group["endpoints"]>
>

/**
 * The layer of a group's handlers, as `HttpApiBuilder.group(api, name, build)`, whose handlers may fail with
 * domain errors (see the module comment).
 */
export const group = <
  ApiId extends string,
  Groups extends HttpApiGroup.Constraint,
  const Name extends HttpApiGroup.Identifier<Groups>,
  Return
>(
  api: HttpApi.HttpApi<ApiId, Groups>,
  name: Name,
  build: (handlers: DomainHandlers<HttpApiGroup.WithIdentifier<Groups, Name>>) => HttpApiBuilder.Handlers.ValidateReturn<Return>
): Layer.Layer<
  HttpApiGroup.Service<ApiId, Name>,
  HttpApiBuilder.Handlers.Error<Return>,
  Exclude<HttpApiBuilder.Handlers.Context<Return>, Scope.Scope>
> =>
  // The same handlers at run time: only their declared failures differ, and the middleware maps those.
  HttpApiBuilder.group(api, name, build as never)
