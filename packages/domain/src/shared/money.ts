/**
 * Money: amounts in integer minor units of an ISO 4217 currency (cents for USD, yen for JPY, fils for KWD),
 * written on the wire as decimal strings and parsed exactly (digit by digit into a bigint, never through a
 * float). Divisions round half to even.
 */
import { Result } from "effect"
import { invalidParam, type InvalidParam } from "./errors.js"

/** The currencies this platform's `Intl` knows (ISO 4217 codes, upper case). */
const knownCurrencies: ReadonlySet<string> = new Set(Intl.supportedValuesOf("currency"))

/** Whether `code` is an ISO 4217 currency the platform knows. */
export const isCurrency = (code: string): boolean => knownCurrencies.has(code)

/** How many decimals the currency's minor unit has (JPY 0, USD 2, KWD 3), as `Intl` says. */
export const minorDigits = (currency: string): number =>
  new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits ?? 2

/** The largest amount kept, in minor units: the largest integer a JSON number carries exactly. */
export const maxMinorUnits = Number.MAX_SAFE_INTEGER

/** Checks a currency code: upper-case ISO 4217, known to the platform. */
export const checkCurrency = (field: string, code: string): Result.Result<string, InvalidParam> =>
  isCurrency(code) ? Result.succeed(code) : Result.fail(invalidParam(field, "must be an ISO 4217 currency code such as USD"))

const decimal = /^(\d{1,20})(?:\.(\d{1,20}))?$/

/**
 * Parses a decimal string (`"12.50"`, `"1000"`) into minor units of `currency`, exactly. More decimals than the
 * currency has are refused unless they are zeros; so are signs, exponents and amounts past {@link maxMinorUnits}.
 */
export const parseAmount = (field: string, text: string, currency: string): Result.Result<number, InvalidParam> => {
  const digits = minorDigits(currency)
  const match = decimal.exec(text)
  const bad = () =>
    Result.fail(invalidParam(field, `must be a decimal string with at most ${digits} decimals for ${currency}, such as "${formatAmount(1999, currency)}"`))
  if (match === null) return bad()
  const whole = match[1]!
  const fraction = (match[2] ?? "").replace(/0+$/, "")
  if (fraction.length > digits) return bad()
  const minor = BigInt(whole) * 10n ** BigInt(digits) + BigInt(fraction.padEnd(digits, "0") || "0")
  if (minor > BigInt(maxMinorUnits)) return Result.fail(invalidParam(field, "is too large"))
  return Result.succeed(Number(minor))
}

/** Writes minor units as the currency's decimal string (`1999` USD → `"19.99"`, `-5` → `"-0.05"`, JPY `"500"`). */
export const formatAmount = (minor: number | bigint, currency: string): string => {
  const digits = minorDigits(currency)
  const sign = minor < 0 ? "-" : ""
  const text = (typeof minor === "bigint" ? (minor < 0n ? -minor : minor) : BigInt(Math.abs(minor))).toString().padStart(digits + 1, "0")
  return digits === 0 ? `${sign}${text}` : `${sign}${text.slice(0, -digits)}.${text.slice(-digits)}`
}

/** `numerator / denominator` rounded half to even (banker's rounding); the denominator is positive. */
export const divideHalfEven = (numerator: bigint, denominator: bigint): bigint => {
  const negative = numerator < 0n
  const n = negative ? -numerator : numerator
  let quotient = n / denominator
  const twice = (n % denominator) * 2n
  if (twice > denominator || (twice === denominator && quotient % 2n === 1n)) quotient += 1n
  return negative ? -quotient : quotient
}

/** `amount × part / whole` in minor units, rounded half to even; computed in bigint so nothing is lost. */
export const share = (amount: number, part: number, whole: number): number =>
  Number(divideHalfEven(BigInt(amount) * BigInt(part), BigInt(whole)))
