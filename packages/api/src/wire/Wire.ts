/**
 * The wire shapes of the contract's objects (snake_case, ISO 8601 times with `Z`) and the mapping from the
 * domain's values (camelCase, epoch milliseconds). Handlers stay thin: they call a domain service and hand
 * its result to one of these functions.
 */
import { Schema } from "effect"
import { type Machine, Model } from "@lm/domain/core"
import { wireRecord } from "./Record.js"

export { Time, type WireField, type WireFields, type WireRecord, wireRecord, type WireShape } from "./Record.js"
// The parts, by concept: shared scalars (`Scalars.ts`), request inputs (`Inputs.ts`), subscriptions and billing
// (`Subscriptions.ts`); the records of the other features are below.
export * from "./Inputs.js"
export { EntitlementCode, EntitlementCodes, iso, isoNow, isoOrNull, ShortText } from "./Scalars.js"
export * from "./Subscriptions.js"

/** A machine's hardware component on the wire. */
export const ComponentWire = wireRecord(Model.Component)

/** A machine on the wire: its record but the seat deadline, which is the store's index. */
export const MachineWire = wireRecord(Model.Machine, {
  omit: ["seatDeadline"],
  supplied: { components: Schema.Array(ComponentWire) }
})
export type MachineWire = typeof MachineWire.Type

/** A machine on the wire. */
export const machineToWire = (m: Model.Machine): MachineWire =>
  MachineWire.from(m, { components: m.components.map((c) => ComponentWire.from(c)) })

/**
 * A license on the wire: its record with the status it reports now (in place of its stored state) and the seats
 * held, without who suspended it or its revision.
 */
export const LicenseWire = wireRecord(Model.License, {
  omit: ["state", "suspendedBy", "revision"],
  rename: { key: "license_key" },
  supplied: {
    status: Model.LicenseStatus,
    activation_count: Schema.Int,
    effective_entitlements: Schema.Array(Schema.String).annotate({
      description: "Read-only: the sorted union of the license's own codes and its policy's (live from the policy)."
    })
  },
  after: {
    status: "license_key",
    activation_count: "max_activations",
    meta: "subscription_id",
    policy_id: "meta",
    entitlements: "policy_id",
    effective_entitlements: "entitlements"
  },
  describe: {
    policy_id: "The policy (plan) the license was made from or moved to, or null.",
    entitlements: "The license's own entitlement codes, sorted."
  }
})
export type LicenseWire = typeof LicenseWire.Type

/** A license with its machines (GET /licenses/{key}). */
export const LicenseDetailWire = Schema.Struct({ ...LicenseWire.fields, machines: Schema.Array(MachineWire) })
export type LicenseDetailWire = typeof LicenseDetailWire.Type

/** A license as it reports itself now. */
export const licenseToWire = ({ license, status, activationCount, effectiveEntitlements }: Machine.LicenseView): LicenseWire =>
  LicenseWire.from(license, {
    status,
    activation_count: activationCount,
    effective_entitlements: effectiveEntitlements ?? license.entitlements
  })

/** A license with its machines on the wire (what `Licenses.get` answers). */
export const licenseDetailToWire = (
  detail: Machine.LicenseView & { readonly machines: ReadonlyArray<Model.Machine> }
): LicenseDetailWire => ({
  ...licenseToWire(detail),
  machines: detail.machines.map(machineToWire)
})

/** A policy on the wire (CONTRACT §15), with how many licenses refer to it. */
export const PolicyWire = wireRecord(Model.Policy, {
  supplied: { license_count: Schema.Int.annotate({ description: "Read-only: how many licenses refer to the policy." }) },
  after: { license_count: "grace_days" }
})
export type PolicyWire = typeof PolicyWire.Type

export const policyToWire = ({ licenseCount, policy }: { readonly policy: Model.Policy; readonly licenseCount: number }): PolicyWire =>
  PolicyWire.from(policy, { license_count: licenseCount })

/** A generator on the wire, with the number of keys waiting in its pool. */
export const GeneratorWire = wireRecord(Model.Generator, {
  supplied: { pool_size: Schema.Int },
  after: { pool_size: "default_is_floating" }
})
export type GeneratorWire = typeof GeneratorWire.Type

export const generatorToWire = ({ generator, poolSize }: { readonly generator: Model.Generator; readonly poolSize: number }): GeneratorWire =>
  GeneratorWire.from(generator, { pool_size: poolSize })

/** An API key on the wire: never its hashes. */
export const ApiKeyWire = wireRecord(Model.ApiKey, { omit: ["consumerKeyHash", "consumerSecretHash"] })
export type ApiKeyWire = typeof ApiKeyWire.Type

export const apiKeyToWire = (k: Model.ApiKey): ApiKeyWire => ApiKeyWire.from(k)

/** A webhook on the wire: never its secret. */
export const WebhookWire = wireRecord(Model.Webhook, { omit: ["sealedSecret", "failingSince", "updatedAt"] })
export type WebhookWire = typeof WebhookWire.Type

export const webhookToWire = (w: Model.Webhook): WebhookWire => WebhookWire.from(w)

/** A delivery of an event to a webhook on the wire. */
export const DeliveryWire = wireRecord(Model.WebhookDelivery, { omit: ["webhookId", "lockedUntil"] })
export type DeliveryWire = typeof DeliveryWire.Type

export const deliveryToWire = (d: Model.WebhookDelivery): DeliveryWire => DeliveryWire.from(d)

/** A release on the wire (CONTRACT §9): never where the store keeps its artifact, nor its sort key. */
export const ReleaseWire = wireRecord(Model.Release, {
  omit: ["versionKey", "artifactKey"],
  after: { entitlements: "min_app_version" },
  describe: { entitlements: "Codes a license must hold to be offered and download it." }
})
export type ReleaseWire = typeof ReleaseWire.Type

export const releaseToWire = (r: Model.Release): ReleaseWire => ReleaseWire.from(r)

/** The `meta` of a list: total, page, per_page and total_pages (0 when total is 0). */
export const ListMeta = Schema.Struct({ total: Schema.Int, page: Schema.Int, per_page: Schema.Int, total_pages: Schema.Int })
export type ListMeta = typeof ListMeta.Type

export const listMeta = (total: number, page: number, perPage: number): ListMeta => ({
  total,
  page,
  per_page: perPage,
  total_pages: total === 0 ? 0 : Math.ceil(total / perPage)
})
