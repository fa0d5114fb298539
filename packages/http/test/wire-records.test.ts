/**
 * The wire objects derived from the domain's records (`wireRecord`) are written exactly as the contract shows
 * them: the same names, in the same order, times in ISO 8601 with `Z`, and nothing the wire never shows.
 */
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Model } from "@lm/domain"
import { apiKeyToWire, licenseToWire, machineToWire, MachineWire, wireRecord } from "@lm/api/wire"

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

  it("a wire shape that places a field after one it does not have is refused when it is defined", () => {
    expect(() => wireRecord(Model.ApiKey, { supplied: { extra: Schema.Int }, after: { extra: "no_such_field" } })).toThrow(
      /cannot place extra after no_such_field/
    )
  })
})
