/** Numbers, money and times in the browser's own locale and time zone. */

const number = new Intl.NumberFormat(undefined)
const percent = new Intl.NumberFormat(undefined, { style: "percent", maximumFractionDigits: 1 })
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" })
const date = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" })

export const formatNumber = (n: number | null | undefined): string => n === null || n === undefined ? "—" : number.format(n)

export const formatPercent = (n: number | null | undefined): string => n === null || n === undefined ? "—" : percent.format(n)

/** A time of the API (ISO 8601) in the browser's locale; `—` for none. */
export const formatTime = (iso: string | null | undefined): string => {
  if (iso === null || iso === undefined) return "—"
  const t = Date.parse(iso)
  return Number.isNaN(t) ? iso : dateTime.format(t)
}

export const formatDate = (iso: string | null | undefined): string => {
  if (iso === null || iso === undefined) return "—"
  const t = Date.parse(iso)
  return Number.isNaN(t) ? iso : date.format(t)
}

/** A decimal amount of the API (`"29.99"`) in its currency. */
export const formatMoney = (amount: string, currency: string): string => {
  try {
    return new Intl.NumberFormat(undefined, { style: "currency", currency }).format(Number(amount))
  } catch {
    return `${amount} ${currency}`
  }
}

export const formatBytes = (bytes: number | null | undefined): string => {
  if (bytes === null || bytes === undefined) return "—"
  const units = ["B", "KB", "MB", "GB", "TB"]
  let value = bytes
  let unit = 0
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000
    unit++
  }
  return `${new Intl.NumberFormat(undefined, { maximumFractionDigits: unit === 0 ? 0 : 1 }).format(value)} ${units[unit]}`
}

/** Seconds as a short duration (`10 min`, `2 h`, `45 s`). */
export const formatSeconds = (seconds: number | null | undefined): string => {
  if (seconds === null || seconds === undefined) return "—"
  if (seconds % 86400 === 0) return `${formatNumber(seconds / 86400)} d`
  if (seconds % 3600 === 0) return `${formatNumber(seconds / 3600)} h`
  if (seconds % 60 === 0) return `${formatNumber(seconds / 60)} min`
  return `${formatNumber(seconds)} s`
}
