/**
 * Importing licenses exported by WPLM, License Manager for WooCommerce, Digital License Manager, lm itself or a
 * CSV file (CONTRACT §17) through `Licenses.importLicenses` on the memory store: each format's fields and
 * statuses, the machines each format carries (seats counted exactly), keys verbatim (five groups too) that
 * validation then reads, and all or nothing with every bad row named.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Licenses, Licensing } from "@lm/domain"
import { onEngine } from "./engine.js"
import { T0 } from "./fixtures.js"

const importLicenses = (format: "lm" | "wplm" | "lmfwc" | "dlm" | "csv", data: unknown) =>
  Licenses.use((l) => l.importLicenses(format, data))
const view = (key: string) => Licenses.use((l) => l.get(key))
const validate = (licenseKey: string) => Licensing.use((l) => l.validate({ ipAddress: null, licenseKey }))
const activate = (licenseKey: string, fingerprint: string) =>
  Licensing.use((l) => l.activate({ licenseKey, facts: { fingerprint }, ipAddress: null }))
const machinesOf = (key: string) =>
  Effect.map(view(key), (detail) => detail.machines.map((m) => [m.fingerprint, m.status]).sort())

describe("importLicenses", () => {
  it.effect("reads each format's fields and statuses, with source import", () =>
    onEngine(Effect.gen(function*() {
      const far = "2999-01-01T00:00:00.000Z"
      expect(yield* importLicenses("lm", [
        { license_key: "LMAA-BBBB-CCCC-DDDD", status: "revoked", product_id: 7, max_activations: 3, expires_at: far, grace_days: 2 }
      ])).toEqual({ imported: 1, machines: 0 })
      yield* importLicenses("wplm", [{ license_key: "WPLMA-BBBBB-CCCCC-DDDDD-EEEEE", status: 4, order_id: 9 }])
      yield* importLicenses("lmfwc", [{ license_key: "WOO-1234-ABCD", status: 2, times_activated_max: 5, expires_at: "2999-01-01 00:00:00", valid_for: null }])
      yield* importLicenses("dlm", [{ license_key: "dlm-aaaa-bbbb-cccc", status: 4, activations_limit: 2 }])
      yield* importLicenses("csv", "license_key,status,product_id,max_activations\nCSVA-BBBB-CCCC-DDDD,inactive,3,\n\"CSVB-BBBB-CCCC-DDDD\",suspended,,4\n")

      expect(yield* view("LMAA-BBBB-CCCC-DDDD")).toMatchObject({
        status: "revoked",
        license: { source: "import", productId: 7, maxActivations: 3, graceDays: 2, expiresAt: Date.parse(far) }
      })
      expect(yield* view("WPLMA-BBBBB-CCCCC-DDDDD-EEEEE")).toMatchObject({ status: "suspended", license: { orderId: 9 } })
      expect(yield* view("WOO-1234-ABCD")).toMatchObject({ status: "inactive", license: { maxActivations: 5, expiresAt: Date.parse(far) } })
      expect(yield* view("DLM-AAAA-BBBB-CCCC")).toMatchObject({ status: "suspended", license: { maxActivations: 2 } })
      expect(yield* view("CSVA-BBBB-CCCC-DDDD")).toMatchObject({ status: "inactive", license: { productId: 3, maxActivations: null } })
      expect(yield* view("CSVB-BBBB-CCCC-DDDD")).toMatchObject({ status: "suspended", license: { maxActivations: 4 } })
    })))

  it.effect("keeps a five-group key verbatim, which validation then reads", () =>
    onEngine(Effect.gen(function*() {
      yield* importLicenses("wplm", [{ license_key: "ABCDE-FGHIJ-KLMNO-PQRST-UVWXY", status: 2 }])
      const result = yield* validate(" abcde-fghij-klmno-pqrst-uvwxy ")
      expect(result.validation).toMatchObject({ valid: true, code: "valid" })
      expect(result.license.key).toBe("ABCDE-FGHIJ-KLMNO-PQRST-UVWXY")
    })))

  it.effect("imports nothing when a row is bad, naming every bad row", () =>
    onEngine(Effect.gen(function*() {
      const error = yield* Effect.flip(importLicenses("lm", [
        { license_key: "GOOD-AAAA-BBBB-CCCC" },
        { license_key: "BAD_KEY" },
        { license_key: "GOOD-AAAA-BBBB-CCCC" },
        { license_key: "OKAY-AAAA-BBBB-CCCC", status: "sold", expires_at: "tomorrow" },
        "not an object"
      ]))
      expect(error).toMatchObject({ _tag: "InvalidParam", status: 400 })
      expect(Object.keys((error as { params: object }).params).sort()).toEqual(
        ["data[1].license_key", "data[2].license_key", "data[3].status", "data[4]"]
      )
      expect(yield* Effect.flip(view("GOOD-AAAA-BBBB-CCCC"))).toMatchObject({ _tag: "LicenseNotFound" })
    })))

  it.effect("imports nothing when a key is already stored", () =>
    onEngine(Effect.gen(function*() {
      yield* importLicenses("lm", [{ license_key: "TAKEN-AAAA-BBBB" }])
      const error = yield* Effect.flip(importLicenses("lm", [{ license_key: "FRESH-AAAA-BBBB" }, { license_key: "TAKEN-AAAA-BBBB" }]))
      expect(error).toMatchObject({ _tag: "LicenseExists", status: 409 })
      expect(yield* Effect.flip(view("FRESH-AAAA-BBBB"))).toMatchObject({ _tag: "LicenseNotFound" })
    })))

  it.effect("refuses data that is not the format's shape, or more than 10,000 licenses", () =>
    onEngine(Effect.gen(function*() {
      for (const [format, data] of [["lm", "text"], ["csv", []], ["lm", []]] as const) {
        const error = yield* Effect.flip(importLicenses(format, data))
        expect(error).toMatchObject({ _tag: "InvalidParam", params: { data: expect.any(String) } })
      }
      const many = Array.from({ length: 10_001 }, (_, i) => ({ license_key: `MANY-${i}` }))
      expect(yield* Effect.flip(importLicenses("lm", many))).toMatchObject({ params: { data: "must hold at most 10000 licenses" } })
    })))

  it.effect("imports each format's machines, and their seats count as an activation counts them", () =>
    onEngine(Effect.gen(function*() {
      const at = "2026-01-02T03:04:05.000Z"
      expect(yield* importLicenses("lm", [{
        license_key: "MACH-AAAA-BBBB-CCCC",
        max_activations: 2,
        activated_at: at,
        machines: [
          { fingerprint: "lm-1", status: "active", hostname: "box", activated_at: at, components: [{ kind: "cpu", fingerprint: "c1" }] },
          { fingerprint: "lm-2", status: "inactive", deactivation_reason: "client", deactivated_at: at },
          { fingerprint: "lm-3", status: "revoked" }
        ]
      }])).toEqual({ imported: 1, machines: 3 })
      const lm = yield* view("MACH-AAAA-BBBB-CCCC")
      expect(lm).toMatchObject({ status: "active", activationCount: 1, license: { activatedAt: Date.parse(at) } })
      expect(lm.machines.find((m) => m.fingerprint === "lm-1")).toMatchObject({
        hostname: "box", activatedAt: Date.parse(at), components: [{ kind: "cpu", fingerprint: "c1" }]
      })
      expect(lm.machines.find((m) => m.fingerprint === "lm-2")).toMatchObject({ status: "inactive", deactivationReason: "client" })
      // One seat of two is held: one more device takes it, the next is refused; the revoked device stays refused.
      yield* activate("MACH-AAAA-BBBB-CCCC", "new-1")
      expect(yield* Effect.flip(activate("MACH-AAAA-BBBB-CCCC", "new-2"))).toMatchObject({ _tag: "MachineLimitExceeded" })
      expect(yield* Effect.flip(activate("MACH-AAAA-BBBB-CCCC", "lm-3"))).toMatchObject({ code: "machine_revoked" })

      yield* importLicenses("wplm", [{
        license_key: "WPLMM-AAAAA-BBBBB-CCCCC-DDDDD",
        status: 1,
        max_activations: 3,
        machines: [{ fingerprint: "w-1", status: 1 }, { fingerprint: "w-2", status: 3 }],
        registered_devices: ["device-9"],
        registered_domains: [{ domain: "example.com" }]
      }])
      expect(yield* machinesOf("WPLMM-AAAAA-BBBBB-CCCCC-DDDDD")).toEqual(
        [["device-9", "active"], ["example.com", "active"], ["w-1", "active"], ["w-2", "revoked"]]
      )
      expect(yield* view("WPLMM-AAAAA-BBBBB-CCCCC-DDDDD")).toMatchObject({ activationCount: 3 })

      // A floating license's active machine without a lease end gets one from now, so its seat is not held forever.
      yield* importLicenses("lm", [{ license_key: "FLOAT-AAAA-BBBB", is_floating: true, lease_duration: 60, max_activations: 1, machines: [{ fingerprint: "f-1" }] }])
      const floating = yield* view("FLOAT-AAAA-BBBB")
      expect(floating).toMatchObject({ activationCount: 1, license: { isFloating: true, leaseDuration: 60 } })
      expect(floating.machines[0]!.leaseExpiresAt).toBe(T0 + 60_000)

      for (const format of ["lmfwc", "dlm"] as const) {
        const key = `${format}-ACT-0001`
        yield* importLicenses(format, [{
          license_key: key,
          status: 3,
          [format === "lmfwc" ? "times_activated_max" : "activations_limit"]: 1,
          activations: [
            { token: `${format}-t1`, label: "Office", ip_address: "203.0.113.9", created_at: "2026-01-02 03:04:05" },
            { token: `${format}-t2`, created_at: "2026-01-02 03:04:05", deactivated_at: "2026-02-02 03:04:05" }
          ]
        }])
        const detail = yield* view(key)
        expect(detail).toMatchObject({ activationCount: 1 })
        expect(detail.machines.find((m) => m.fingerprint === `${format}-t1`)).toMatchObject({ name: "Office", ipAddress: "203.0.113.9", status: "active" })
        expect(detail.machines.find((m) => m.fingerprint === `${format}-t2`)).toMatchObject({ status: "inactive" })
      }
    })))

  it.effect("refuses machines beyond the seats, a fingerprint twice and bad machine fields, naming each", () =>
    onEngine(Effect.gen(function*() {
      const error = yield* Effect.flip(importLicenses("lm", [
        { license_key: "FULL-AAAA-BBBB-CCCC", max_activations: 1, machines: [{ fingerprint: "a" }, { fingerprint: "b" }] },
        // An overage strategy raises the ceiling: 1.5 x 2 = 3 seats hold three.
        { license_key: "OVER-AAAA-BBBB-CCCC", max_activations: 2, overage_strategy: "allow_1_5x", machines: [{ fingerprint: "a" }, { fingerprint: "b" }, { fingerprint: "c" }] },
        { license_key: "TWICE-AAAA-BBBB", machines: [{ fingerprint: "a" }, { fingerprint: "a", status: "inactive" }] },
        { license_key: "BADM-AAAA-BBBB", machines: [{ fingerprint: "" }, { fingerprint: "x", status: "gone" }, { fingerprint: "y", components: [{ kind: "ram", fingerprint: "r" }] }] },
        { license_key: "BADS-AAAA-BBBB", grace_days: 99_999 }
      ]))
      expect(Object.keys((error as { params: object }).params).sort()).toEqual([
        "data[0].machines", "data[2].machines[1].fingerprint", "data[3].machines[0].fingerprint", "data[4].grace_days"
      ])
      expect((error as { params: Record<string, string> }).params["data[0].machines"]).toContain("2 active machines, more than the 1 seats")
      expect(yield* Effect.flip(view("OVER-AAAA-BBBB-CCCC"))).toMatchObject({ _tag: "LicenseNotFound" })
      const wplm = yield* Effect.flip(importLicenses("wplm", [{ license_key: "WBAD-AAAA", machines: [{ fingerprint: "a", status: 7 }] }]))
      expect(Object.keys((wplm as { params: object }).params)).toEqual(["data[0].machines[0].status"])
      const woo = yield* Effect.flip(importLicenses("dlm", [{ license_key: "DBAD-AAAA", activations: [{ label: "no token" }] }]))
      expect(Object.keys((woo as { params: object }).params)).toEqual(["data[0].activations[0].token"])
    })))
})
