/**
 * Money on the wire (CONTRACT §10): decimal strings parsed exactly into the currency's minor units (JPY 0
 * decimals, USD 2, KWD 3, as Intl knows them), written back the same, and half-even rounding.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import { failureOf, successOf } from "./fixtures.js"
import { Money } from "@lm/domain"

describe("money", () => {
  it("knows each currency's minor unit from Intl", () => {
    expect(Money.minorDigits("JPY")).toBe(0)
    expect(Money.minorDigits("USD")).toBe(2)
    expect(Money.minorDigits("KWD")).toBe(3)
    expect(Money.isCurrency("EUR")).toBe(true)
    expect(Money.isCurrency("usd")).toBe(false)
    expect(Money.isCurrency("ZZZ")).toBe(false)
  })

  it("parses decimal strings exactly into minor units", () => {
    expect(successOf(Money.parseAmount("amount", "19.99", "USD"))).toBe(1999)
    expect(successOf(Money.parseAmount("amount", "0.1", "USD"))).toBe(10)
    expect(successOf(Money.parseAmount("amount", "10.500", "USD"))).toBe(1050)
    expect(successOf(Money.parseAmount("amount", "500", "JPY"))).toBe(500)
    expect(successOf(Money.parseAmount("amount", "1.234", "KWD"))).toBe(1234)
    // 0.29 × 100 is 28.999999999999996 in floating point; the exact parse has no such slip
    expect(successOf(Money.parseAmount("amount", "0.29", "USD"))).toBe(29)
    expect(successOf(Money.parseAmount("amount", "90071992547409.91", "USD"))).toBe(Number.MAX_SAFE_INTEGER)
  })

  it("refuses what is not an exact amount of the currency, naming the field", () => {
    for (const [text, currency] of [["1.999", "USD"], ["5.5", "JPY"], ["-1", "USD"], ["1e3", "USD"], ["", "USD"], [" 1", "USD"], ["90071992547409.92", "USD"]] as const) {
      const error = failureOf(Money.parseAmount("amount", text, currency))
      expect(error.code).toBe("rest_invalid_param")
      expect(Object.keys(error.params)).toEqual(["amount"])
    }
  })

  it("writes minor units back as the currency's decimal string", () => {
    expect(Money.formatAmount(1999, "USD")).toBe("19.99")
    expect(Money.formatAmount(5, "USD")).toBe("0.05")
    expect(Money.formatAmount(-5, "USD")).toBe("-0.05")
    expect(Money.formatAmount(500, "JPY")).toBe("500")
    expect(Money.formatAmount(1, "KWD")).toBe("0.001")
  })

  it("round-trips every amount through its string", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), fc.constantFrom("USD", "JPY", "KWD", "EUR"), (minor, currency) => {
        const parsed = Money.parseAmount("amount", Money.formatAmount(minor, currency), currency)
        expect(Result.isSuccess(parsed) && parsed.success).toBe(minor)
      })
    )
  })

  it("rounds half to even", () => {
    expect(Money.divideHalfEven(5n, 2n)).toBe(2n)
    expect(Money.divideHalfEven(7n, 2n)).toBe(4n)
    expect(Money.divideHalfEven(-5n, 2n)).toBe(-2n)
    expect(Money.divideHalfEven(10n, 4n)).toBe(2n)
    expect(Money.divideHalfEven(11n, 4n)).toBe(3n)
    expect(Money.divideHalfEven(1n, 3n)).toBe(0n)
    expect(Money.divideHalfEven(2n, 3n)).toBe(1n)
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 20n }), fc.bigInt({ min: 1n, max: 10n ** 12n }), (n, d) => {
        const q = Money.divideHalfEven(n, d)
        // within half a unit of the exact quotient: |n − q·d| ≤ d/2
        const error = n - q * d
        expect(2n * (error < 0n ? -error : error) <= d).toBe(true)
      })
    )
  })
})
