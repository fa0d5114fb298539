/**
 * Reading licenses exported by another licensing system (CONTRACT §17, `POST /licenses/import`): each format's
 * rows become license drafts (`source: import`, keys verbatim but upper-cased, in any stored key shape), all or
 * nothing: every bad row is named (`data[3].expires_at`), and nothing is read when one is. Pure: no store, no clock.
 */
import { Result } from "effect"
import { invalidParam, InvalidParam } from "../shared/errors.js"
import { isStoredKeyFormat, normalizeKey } from "./keys.js"
import { newLicenseDraft } from "./license.js"
import type { LicenseDraft, LicenseSettings, LicenseState, LicenseStatus } from "./model.js"
import { licenseStatuses } from "./model.js"
import { licenseStatusCodes } from "./wplm.js"

/** The formats `POST /licenses/import` reads. */
export const importFormats = ["lm", "wplm", "lmfwc", "dlm", "csv"] as const
export type ImportFormat = (typeof importFormats)[number]

/** The formats `GET /licenses/export` writes (the first is the default); its CSV imports back as `csv`. */
export const exportFormats = ["ndjson", "csv"] as const
export type ExportFormat = (typeof exportFormats)[number]

/** The most licenses one import takes. */
export const MAX_IMPORT_ROWS = 10_000

/** The state a license of a reported status is stored in (the derived statuses are all `issued`). */
const stateOfStatus = (status: LicenseStatus): LicenseState =>
  status === "pending" || status === "suspended" || status === "revoked" || status === "terminated" ? status : "issued"

/**
 * License Manager for WooCommerce and Digital License Manager number statuses 1 sold, 2 delivered, 3 active,
 * 4 inactive (disabled by the shop: it validates nowhere, so it is suspended here).
 */
const wooStatuses: Readonly<Record<number, LicenseStatus>> = { 1: "inactive", 2: "inactive", 3: "active", 4: "suspended" }

const wplmStatuses = new Map(Object.entries(licenseStatusCodes).map(([status, code]) => [code, status as LicenseStatus]))

type Row = Readonly<Record<string, unknown>>

/** A field's problem, or its value. */
class Bad {
  readonly field: string
  readonly message: string
  constructor(field: string, message: string) {
    this.field = field
    this.message = message
  }
}

const optionalInt = (row: Row, field: string): number | null => {
  const value = row[field]
  if (value === undefined || value === null || value === "") return null
  const n = typeof value === "string" ? Number(value) : value
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) throw new Bad(field, "must be a non-negative integer or null")
  return n
}

/** An ISO 8601 time, or WordPress's `YYYY-MM-DD HH:MM:SS` (UTC), or null. */
const optionalTime = (row: Row, field: string): number | null => {
  const value = row[field]
  if (value === undefined || value === null || value === "") return null
  if (typeof value !== "string") throw new Bad(field, "must be a time or null")
  const text = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(value) ? `${value.replace(" ", "T")}Z` : value
  const millis = /^\d{4}-\d{2}-\d{2}(T.*)?$/.test(text) ? Date.parse(text) : Number.NaN
  if (Number.isNaN(millis)) throw new Bad(field, "must be an ISO 8601 time, or YYYY-MM-DD HH:MM:SS in UTC")
  return millis
}

const keyOf = (row: Row): string => {
  const value = row.license_key
  if (typeof value !== "string") throw new Bad("license_key", "is required")
  const key = normalizeKey(value)
  if (!isStoredKeyFormat(key)) {
    throw new Bad("license_key", "must be 2 to 8 dash-separated groups of 1 to 32 of A-Z and 0-9, at most 128 characters")
  }
  return key
}

const statusOf = (row: Row, format: ImportFormat): LicenseStatus => {
  const value = row.status
  if (value === undefined || value === null || value === "") return "inactive"
  if (format === "lm" || format === "csv") {
    if (typeof value === "string" && (licenseStatuses as ReadonlyArray<string>).includes(value)) return value as LicenseStatus
    throw new Bad("status", `must be one of ${licenseStatuses.join(", ")}`)
  }
  const code = typeof value === "string" ? Number(value) : value
  const status = format === "wplm" ? wplmStatuses.get(code as number) : wooStatuses[code as number]
  if (status === undefined) {
    throw new Bad("status", format === "wplm" ? "must be an integer from 0 to 6" : "must be 1 (sold), 2 (delivered), 3 (active) or 4 (inactive)")
  }
  return status
}

/** The settings a row of `format` carries. */
const settingsOf = (row: Row, format: ImportFormat): Partial<LicenseSettings> => {
  const woo = format === "lmfwc" || format === "dlm"
  const graceDays = woo ? null : optionalInt(row, "grace_days")
  return {
    productId: optionalInt(row, "product_id"),
    orderId: optionalInt(row, "order_id"),
    userId: optionalInt(row, "user_id"),
    maxActivations: optionalInt(row, format === "lmfwc" ? "times_activated_max" : format === "dlm" ? "activations_limit" : "max_activations"),
    validForDays: optionalInt(row, woo ? "valid_for" : "valid_for_days"),
    expiresAt: optionalTime(row, "expires_at"),
    ...(graceDays === null ? {} : { graceDays })
  }
}

/** A CSV text (RFC 4180: quoted fields, `""` inside quotes) as rows keyed by its header line. */
export const csvRows = (text: string): ReadonlyArray<Row> => {
  const lines: Array<Array<string>> = []
  let field = ""
  let line: Array<string> = []
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === "\"" && text[i + 1] === "\"") {
        field += "\""
        i++
      } else if (c === "\"") quoted = false
      else field += c
    } else if (c === "\"") quoted = true
    else if (c === ",") {
      line.push(field)
      field = ""
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++
      line.push(field)
      if (line.some((f) => f !== "")) lines.push(line)
      line = []
      field = ""
    } else field += c
  }
  line.push(field)
  if (line.some((f) => f !== "")) lines.push(line)
  const [header, ...rest] = lines
  if (header === undefined) return []
  return rest.map((cells) => Object.fromEntries(header.map((name, i) => [name.trim(), cells[i] ?? ""])))
}

/**
 * The license drafts of an export in `format` (`data`: an array of objects, or for `csv` the CSV text), made at
 * `now`; or one `InvalidParam` naming every bad row's field (`data[i].field`), a key twice in the data included.
 */
export const readImport = (format: ImportFormat, data: unknown, now: number): Result.Result<ReadonlyArray<LicenseDraft>, InvalidParam> => {
  const rows = format === "csv" ? (typeof data === "string" ? csvRows(data) : undefined) : Array.isArray(data) ? data : undefined
  if (rows === undefined) return Result.fail(invalidParam("data", format === "csv" ? "must be the CSV text" : "must be an array of licenses"))
  if (rows.length === 0) return Result.fail(invalidParam("data", "must hold at least one license"))
  if (rows.length > MAX_IMPORT_ROWS) return Result.fail(invalidParam("data", `must hold at most ${MAX_IMPORT_ROWS} licenses`))
  const drafts: Array<LicenseDraft> = []
  const params: Record<string, string> = {}
  const seen = new Set<string>()
  rows.forEach((row: unknown, i) => {
    try {
      if (typeof row !== "object" || row === null || Array.isArray(row)) throw new Bad("", "must be an object")
      const key = keyOf(row as Row)
      if (seen.has(key)) throw new Bad("license_key", "appears twice in the data")
      seen.add(key)
      const status = statusOf(row as Row, format)
      drafts.push(newLicenseDraft(key, settingsOf(row as Row, format), "import", null, now, stateOfStatus(status)))
    } catch (error) {
      if (!(error instanceof Bad)) throw error
      params[error.field === "" ? `data[${i}]` : `data[${i}].${error.field}`] = error.message
    }
  })
  const names = Object.keys(params)
  if (names.length > 0) {
    return Result.fail(new InvalidParam({ message: `Invalid row(s): ${names.slice(0, 20).join(", ")}${names.length > 20 ? ", ..." : ""}.`, params }))
  }
  return Result.succeed(drafts)
}
