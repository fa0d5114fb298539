/**
 * Importing licenses exported by WPLM, License Manager for WooCommerce, Digital License Manager, lm itself or a
 * CSV file (CONTRACT §17) through `Licenses.importLicenses` on the memory store: each format's fields and
 * statuses, keys verbatim (five groups too) that validation then reads, and all or nothing with every bad row named.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Licenses, Licensing } from "@lm/domain"
import { onEngine } from "./engine.js"

const importLicenses = (format: "lm" | "wplm" | "lmfwc" | "dlm" | "csv", data: unknown) =>
  Licenses.use((l) => l.importLicenses(format, data))
const view = (key: string) => Licenses.use((l) => l.get(key))
const validate = (licenseKey: string) => Licensing.use((l) => l.validate({ ipAddress: null, licenseKey }))

describe("importLicenses", () => {
  it.effect("reads each format's fields and statuses, with source import", () =>
    onEngine(Effect.gen(function*() {
      const far = "2999-01-01T00:00:00.000Z"
      expect(yield* importLicenses("lm", [
        { license_key: "LMAA-BBBB-CCCC-DDDD", status: "revoked", product_id: 7, max_activations: 3, expires_at: far, grace_days: 2 }
      ])).toEqual({ imported: 1 })
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
})
