/**
 * The wire objects derived from the domain's records (`wireRecord`) are written exactly as the contract shows
 * them: the same names, in the same order, times in ISO 8601 with `Z`, and nothing the wire never shows.
 */
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Model } from "@lm/domain"
import { AuditEntryWire, auditEntryToWire } from "@lm/api"
import {
  apiKeyToWire,
  billingEventToWire,
  licenseToWire,
  machineToWire,
  MachineWire,
  policyToWire,
  renewalToWire,
  subscriptionToWire,
  SubscriptionWire,
  wireRecord
} from "@lm/api/wire"

const t0 = Date.UTC(2026, 0, 31, 12, 0, 0)

const license: Model.License = {
  id: 7,
  key: "ABCD-EFGH",
  state: "issued",
  productId: 3,
  orderId: null,
  userId: 11,
  maxActivations: 2,
  overageStrategy: "deny",
  isFloating: false,
  leaseDuration: 600,
  requireHeartbeat: false,
  heartbeatInterval: 600,
  validForDays: null,
  expiresAt: t0 + 86_400_000,
  graceDays: 0,
  meta: { plan: "pro" },
  policyId: null,
  entitlements: ["export"],
  activatedAt: t0,
  source: "api",
  generatorId: null,
  subscriptionId: null,
  suspendedBy: null,
  createdAt: t0,
  updatedAt: t0,
  revision: 4
}

const machine: Model.Machine = {
  id: 9,
  licenseId: 7,
  fingerprint: "fp-1",
  name: null,
  hostname: "host",
  platform: null,
  appVersion: "1.2.0",
  ipAddress: null,
  status: "active",
  activatedAt: t0,
  deactivatedAt: null,
  deactivationReason: null,
  lastHeartbeatAt: t0,
  leaseExpiresAt: null,
  seatDeadline: t0 + 1_200_000,
  meta: {},
  components: [{ id: 1, kind: "cpu", fingerprint: "c1", name: null }],
  createdAt: t0
}

describe("records on the wire", () => {
  it("a license is written with its status now, its seats held, its entitlements and its fields in the contract's order", () => {
    expect(JSON.stringify(licenseToWire({ license, status: "active", activationCount: 1 }))).toBe(
      `{"id":7,"license_key":"ABCD-EFGH","status":"active","product_id":3,"order_id":null,"user_id":11,` +
        `"max_activations":2,"activation_count":1,"overage_strategy":"deny","is_floating":false,"lease_duration":600,` +
        `"require_heartbeat":false,"heartbeat_interval":600,"valid_for_days":null,"expires_at":"2026-02-01T12:00:00.000Z",` +
        `"grace_days":0,"activated_at":"2026-01-31T12:00:00.000Z","source":"api","generator_id":null,"subscription_id":null,` +
        `"meta":{"plan":"pro"},"policy_id":null,"entitlements":["export"],"effective_entitlements":["export"],"created_at":"2026-01-31T12:00:00.000Z","updated_at":"2026-01-31T12:00:00.000Z"}`
    )
  })

  it("a machine is written without its seat deadline, with its components", () => {
    expect(JSON.stringify(machineToWire(machine))).toBe(
      `{"id":9,"license_id":7,"fingerprint":"fp-1","name":null,"hostname":"host","platform":null,"app_version":"1.2.0",` +
        `"ip_address":null,"status":"active","activated_at":"2026-01-31T12:00:00.000Z","deactivated_at":null,` +
        `"deactivation_reason":null,"last_heartbeat_at":"2026-01-31T12:00:00.000Z","lease_expires_at":null,"meta":{},` +
        `"components":[{"id":1,"kind":"cpu","fingerprint":"c1","name":null}],"created_at":"2026-01-31T12:00:00.000Z"}`
    )
    // The wire schema accepts what the writer gives, and nothing names the store's index.
    expect(Schema.is(MachineWire)(machineToWire(machine))).toBe(true)
    expect(Object.keys(MachineWire.fields)).not.toContain("seat_deadline")
  })

  it("an API key never shows its hashes", () => {
    const key: Model.ApiKey = {
      id: 1,
      description: "ci",
      scope: "read",
      consumerKeyHash: "h1",
      consumerSecretHash: "h2",
      truncatedKey: "ck_…abcd",
      createdAt: t0,
      lastAccessAt: null
    }
    expect(apiKeyToWire(key)).toEqual({
      id: 1,
      description: "ci",
      scope: "read",
      truncated_key: "ck_…abcd",
      created_at: "2026-01-31T12:00:00.000Z",
      last_access_at: null
    })
  })

  it("a subscription is written with its money in its currency, without its calendar's anchor or its revision", () => {
    const subscription: Model.Subscription = {
      id: 5,
      status: "active",
      userId: 11,
      productId: null,
      licenseId: 7,
      billingPeriod: "month",
      billingInterval: 1,
      amount: 1999,
      currency: "USD",
      paymentMethod: null,
      trialEnd: null,
      billingAnchor: t0,
      currentPeriodStart: t0,
      currentPeriodEnd: t0 + 86_400_000,
      nextPaymentAt: t0 + 86_400_000,
      lastPaymentAt: null,
      endDate: null,
      cancelAtPeriodEnd: false,
      pausedAt: null,
      cancelledAt: null,
      items: [{ id: 1, productId: 3, quantity: 2, amount: 500 }],
      billingProvider: "stripe",
      externalId: "sub_1",
      createdAt: t0,
      updatedAt: t0,
      revision: 3
    }
    const wire = subscriptionToWire(subscription)
    expect(JSON.stringify(wire)).toBe(
      `{"id":5,"status":"active","user_id":11,"product_id":null,"license_id":7,"billing_period":"month","billing_interval":1,` +
        `"amount":"19.99","currency":"USD","payment_method":null,"trial_end":null,"current_period_start":"2026-01-31T12:00:00.000Z",` +
        `"current_period_end":"2026-02-01T12:00:00.000Z","next_payment_at":"2026-02-01T12:00:00.000Z","last_payment_at":null,` +
        `"end_date":null,"cancel_at_period_end":false,"paused_at":null,"cancelled_at":null,` +
        `"items":[{"id":1,"product_id":3,"quantity":2,"amount":"5.00"}],"billing_provider":"stripe","external_id":"sub_1",` +
        `"created_at":"2026-01-31T12:00:00.000Z","updated_at":"2026-01-31T12:00:00.000Z"}`
    )
    expect(Schema.is(SubscriptionWire)(wire)).toBe(true)
  })

  it("a renewal record is written with its money, proration and plans in its currency, without its subscription", () => {
    const plan = { amount: 1000, billingPeriod: "month", billingInterval: 1, productId: null } as const
    expect(JSON.stringify(renewalToWire({
      id: 2,
      subscriptionId: 5,
      type: "switch",
      amount: 250,
      currency: "JPY",
      status: "paid",
      periodStart: t0,
      periodEnd: t0 + 86_400_000,
      proration: { credit: 750, charge: 1000, net: 250 },
      from: plan,
      to: { ...plan, amount: 2000, billingPeriod: "year", productId: 4 },
      transactionId: "tx-1",
      createdAt: t0
    }))).toBe(
      `{"id":2,"type":"switch","amount":"250","currency":"JPY","status":"paid","period_start":"2026-01-31T12:00:00.000Z",` +
        `"period_end":"2026-02-01T12:00:00.000Z","proration":{"credit":"750","charge":"1000","net":"250"},` +
        `"from":{"amount":"1000","billing_period":"month","billing_interval":1,"product_id":null},` +
        `"to":{"amount":"2000","billing_period":"year","billing_interval":1,"product_id":4},"transaction_id":"tx-1",` +
        `"created_at":"2026-01-31T12:00:00.000Z"}`
    )
  })

  it("a billing provider event is written under the provider's event id, without when the provider says it occurred", () => {
    expect(JSON.stringify(billingEventToWire({
      id: 40,
      eventId: "evt_1",
      provider: "paddle",
      type: "transaction.completed",
      externalId: "sub_1",
      subscriptionId: 5,
      outcome: "applied",
      occurredAt: t0 - 1000,
      receivedAt: t0
    }))).toBe(
      `{"id":"evt_1","provider":"paddle","type":"transaction.completed","external_id":"sub_1","subscription_id":5,` +
        `"outcome":"applied","received_at":"2026-01-31T12:00:00.000Z"}`
    )
  })

  it("a policy is written with the count of its licenses after its settings", () => {
    expect(JSON.stringify(policyToWire({
      policy: {
        id: 3,
        name: "Pro",
        productId: 7,
        entitlements: ["export"],
        maxActivations: 5,
        overageStrategy: "deny",
        isFloating: false,
        leaseDuration: 600,
        requireHeartbeat: true,
        heartbeatInterval: 300,
        validForDays: 365,
        graceDays: 2,
        createdAt: t0,
        updatedAt: t0
      },
      licenseCount: 4
    }))).toBe(
      `{"id":3,"name":"Pro","product_id":7,"entitlements":["export"],"max_activations":5,"overage_strategy":"deny",` +
        `"is_floating":false,"lease_duration":600,"require_heartbeat":true,"heartbeat_interval":300,"valid_for_days":365,` +
        `"grace_days":2,"license_count":4,"created_at":"2026-01-31T12:00:00.000Z","updated_at":"2026-01-31T12:00:00.000Z"}`
    )
  })

  it("an audit log entry is written with its actor and target as objects of their own", () => {
    const wire = auditEntryToWire({
      id: 8,
      at: t0,
      actor: { type: "api_key", apiKeyId: 1, truncatedKey: "ck_…abcd" },
      ip: "203.0.113.9",
      action: "license.revoke",
      target: { type: "license", id: "ABCD-EFGH" },
      requestId: "r-1",
      status: 200
    })
    expect(JSON.stringify(wire)).toBe(
      `{"id":8,"at":"2026-01-31T12:00:00.000Z","actor":{"type":"api_key","api_key_id":1,"truncated_key":"ck_…abcd"},` +
        `"ip":"203.0.113.9","action":"license.revoke","target":{"type":"license","id":"ABCD-EFGH"},"request_id":"r-1","status":200}`
    )
    expect(Schema.is(AuditEntryWire)(wire)).toBe(true)
  })

  it("a wire shape that places a field after one it does not have is refused when it is defined", () => {
    expect(() => wireRecord(Model.ApiKey, { supplied: { extra: Schema.Int }, after: { extra: "no_such_field" } })).toThrow(
      /cannot place extra after no_such_field/
    )
  })
})
