/**
 * The one definition of the lm/v1 HTTP API: routes, schemas, the OpenAPI document and the typed client all
 * come from it. Paths here are relative to `{rest_root}`; the server mounts the API at `LM_REST_ROOT`
 * (default `/api`), so `/lm/v1/health` is served at `/api/lm/v1/health`.
 *
 * To add a group: `.add(MyGroup)` before `.prefix(...)` and `.middleware(ErrorEnvelope)` (both apply to the
 * groups present when they are called); `@lm/http` then fails to compile until its `ApiHandlers`
 * (`handlers/ApiHandlers.ts`) holds the group's handlers (`"my-group": MyGroupHandlers`).
 */
import { HttpApi, OpenApi } from "effect/http-api"
import { version } from "./version.js"
import { finishOpenApi } from "./OpenApiDocument.js"
import { AnalyticsGroup } from "./groups/Analytics.js"
import { BillingGroup, BillingProvidersGroup } from "./groups/Billing.js"
import { ErrorEnvelope } from "./middleware/ErrorEnvelope.js"
import { ApiKeysGroup } from "./groups/ApiKeys.js"
import { AuditLogGroup } from "./groups/AuditLog.js"
import { ClientGroup } from "./groups/Client.js"
import { GeneratorsGroup } from "./groups/Generators.js"
import { LicensesGroup } from "./groups/Licenses.js"
import { MachinesGroup } from "./groups/Machines.js"
import { parseOptions } from "./ParseOptions.js"
import { PoliciesGroup } from "./groups/Policies.js"
import { SubscriptionsGroup } from "./groups/Subscriptions.js"
import { ReleasesGroup, UpdatesGroup } from "./groups/Releases.js"
import { SystemGroup } from "./groups/System.js"
import { WebhooksGroup } from "./groups/Webhooks.js"

/** The path of the API under `{rest_root}`. */
export const apiPath = "/lm/v1"

/** The path of the OpenAPI document under `{rest_root}`: served beside the API (it is not one of its endpoints). */
export const openApiPath = `${apiPath}/openapi.json` as const

export { parseOptions, strictPayloadOptions } from "./ParseOptions.js"

/** The lm/v1 API. */
export class Api extends HttpApi.make("lm")
  .add(SystemGroup)
  .add(ClientGroup)
  .add(LicensesGroup)
  .add(MachinesGroup)
  .add(GeneratorsGroup)
  .add(PoliciesGroup)
  .add(ApiKeysGroup)
  .add(WebhooksGroup)
  .add(SubscriptionsGroup)
  .add(BillingGroup)
  .add(BillingProvidersGroup)
  .add(AnalyticsGroup)
  .add(ReleasesGroup)
  .add(UpdatesGroup)
  .add(AuditLogGroup)
  .prefix(apiPath)
  .middleware(ErrorEnvelope)
  .annotate(HttpApi.ParseOptions, parseOptions)
  .annotateMerge(OpenApi.annotations({
    title: "Licensing Service lm/v1",
    version,
    description: "License keys, device seats, floating leases, heartbeats and Ed25519-signed offline verification.",
    license: { name: "MIT", url: "https://opensource.org/license/mit" },
    transform: finishOpenApi
  }))
{}
