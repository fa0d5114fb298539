/**
 * The handlers of every group of the lm/v1 API, by the group's name: the one list the server serves
 * (`server/ApiServer.ts` merges every entry). Its type is computed from `Api`, so a group added to the API
 * (`.add(MyGroup)` in `@lm/api`) without an entry here fails to compile, naming it
 * (`Property 'my-group' is missing in type …`), and an entry holding another group's handlers fails too.
 */
import { Layer } from "effect"
import type { HttpApi, HttpApiGroup } from "effect/http-api"
import { Api } from "@lm/api"
import { AnalyticsHandlers } from "./Analytics.js"
import { ApiKeysHandlers } from "./ApiKeys.js"
import { AuditLogHandlers } from "./AuditLog.js"
import { BillingHandlers, BillingProvidersHandlers } from "./Billing.js"
import { ClientHandlers } from "./Client.js"
import { GeneratorsHandlers } from "./Generators.js"
import { LicensesHandlers } from "./Licenses.js"
import { MachinesHandlers } from "./Machines.js"
import { PoliciesHandlers } from "./Policies.js"
import { ReleasesHandlers, UpdatesHandlers } from "./Releases.js"
import { SubscriptionsHandlers } from "./Subscriptions.js"
import { SystemHandlers } from "./System.js"
import { WebhooksHandlers } from "./Webhooks.js"

/** For each group of `A`, by its name, a layer of that group's handlers (`group(api, name, …)`). */
export type HandlersOf<A> = A extends HttpApi.HttpApi<infer Id, infer Groups> ? {
    readonly [Name in HttpApiGroup.Identifier<Groups>]: Layer.Layer<HttpApiGroup.Service<Id, Name>, any, any>
  }
  : never

/** The handlers of every group of `Api`. */
export const ApiHandlers = {
  system: SystemHandlers,
  client: ClientHandlers,
  licenses: LicensesHandlers,
  machines: MachinesHandlers,
  generators: GeneratorsHandlers,
  policies: PoliciesHandlers,
  "api-keys": ApiKeysHandlers,
  webhooks: WebhooksHandlers,
  subscriptions: SubscriptionsHandlers,
  billing: BillingHandlers,
  billingProviders: BillingProvidersHandlers,
  analytics: AnalyticsHandlers,
  releases: ReleasesHandlers,
  updates: UpdatesHandlers,
  "audit-log": AuditLogHandlers
} satisfies HandlersOf<typeof Api>

type AnyLayer = Layer.Layer<any, any, any>

/** Every entry of `layers` merged into one layer: what each provides, needs and fails with. */
export const mergeEntries = <const Layers extends Record<string, Layer.Any>>(
  layers: Layers
): Layer.Layer<Layer.Success<Layers[keyof Layers]>, Layer.Error<Layers[keyof Layers]>, Layer.Services<Layers[keyof Layers]>> =>
  Layer.mergeAll(...(Object.values(layers) as [AnyLayer, ...Array<AnyLayer>])) as never
