/**
 * Reading licenses exported by another licensing system (CONTRACT §17, `POST /licenses/import`): each format's
 * rows become license drafts (`source: import`, keys verbatim but upper-cased, in any stored key shape) with the
 * machines the format carries, all or nothing: every bad row is named (`data[3].expires_at`,
 * `data[3].machines[1].fingerprint`), and nothing is read when one is. Pure: no store, no clock.
 *
 * Machines by format: `lm` rows carry `machines` as `GET /licenses/{key}` (and the export) lists them; `wplm` the
 * same with WPLM's integer machine statuses, and its `registered_devices` / `registered_domains` (lists of
 * device ids or domain names: active machines fingerprinted by them); `lmfwc` and `dlm` their `activations`
 * (`token` is the fingerprint, `label` the name; a `deactivated_at` makes it inactive). `csv` has none.
 * The seats they hold are counted exactly: a row whose active machines exceed its seat ceiling is refused.
 */
import { Result } from "effect"
import { invalidParam, InvalidParam } from "../shared/errors.js"
import { isStoredKeyFormat, normalizeKey } from "./keys.js"
import { checkLicenseSettings, newLicenseDraft, seatCeiling } from "./license.js"
import { holdsSeatByDeadline, seatDeadline } from "./machine.js"
import type { ComponentDraft, DeactivationReason, LicenseDraft, LicenseSettings, LicenseState, LicenseStatus, Machine, MachineDraft, MachineStatus } from "./model.js"
import { componentKinds, deactivationReasons, isFingerprint, licenseStatuses, machineStatuses, overageStrategies } from "./model.js"
import { licenseStatusCodes, machineStatusCodes } from "./wplm.js"

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
const wplmMachineStatuses = new Map(Object.entries(machineStatusCodes).map(([status, code]) => [code, status as MachineStatus]))

/** A license to import and its machines (their `licenseId` is the saved license's, set when it is stored). */
export interface ImportedLicense {
  readonly draft: LicenseDraft
  readonly machines: ReadonlyArray<Omit<MachineDraft, "licenseId">>
}

/** The most machines one imported license carries. */
export const MAX_IMPORT_MACHINES_PER_LICENSE = 1000

/** The most components one imported machine carries (as an activation takes). */
const MAX_COMPONENTS = 32

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

const optionalText = (row: Row, field: string, max = 255): string | null => {
  const value = row[field]
  if (value === undefined || value === null || value === "") return null
  if (typeof value !== "string" || value.length > max) throw new Bad(field, `must be a text of at most ${max} characters or null`)
  return value
}

const optionalBool = (row: Row, field: string): boolean | undefined => {
  const value = row[field]
  if (value === undefined || value === null || value === "") return undefined
  if (value === true || value === "true" || value === 1 || value === "1") return true
  if (value === false || value === "false" || value === 0 || value === "0") return false
  throw new Bad(field, "must be true or false")
}

const optionalObject = (row: Row, field: string): Record<string, unknown> | undefined => {
  const value = row[field]
  if (value === undefined || value === null) return undefined
  if (typeof value !== "object" || Array.isArray(value)) throw new Bad(field, "must be an object")
  return value as Record<string, unknown>
}

/** `value` as one of `choices`, or undefined when absent. */
const optionalChoice = <A extends string>(row: Row, field: string, choices: ReadonlyArray<A>): A | undefined => {
  const value = row[field]
  if (value === undefined || value === null || value === "") return undefined
  if (typeof value === "string" && (choices as ReadonlyArray<string>).includes(value)) return value as A
  throw new Bad(field, `must be one of ${choices.join(", ")}`)
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

/** Drops the settings a row leaves out, so that the license's defaults apply to them. */
const given = <A extends Record<string, unknown>>(fields: A): { [K in keyof A]?: Exclude<A[K], undefined> } =>
  Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as { [K in keyof A]?: Exclude<A[K], undefined> }

/**
 * The settings a row of `format` carries, checked against the limits of a create (CONTRACT §3). This API's own
 * formats (`lm`, `wplm`, `csv`) carry every setting its License object has but the policy (policies do not move).
 */
const settingsOf = (row: Row, format: ImportFormat): Partial<LicenseSettings> => {
  const woo = format === "lmfwc" || format === "dlm"
  const graceDays = woo ? null : optionalInt(row, "grace_days")
  const entitlements = woo ? undefined : row.entitlements
  if (entitlements !== undefined && entitlements !== null && !(Array.isArray(entitlements) && entitlements.every((e) => typeof e === "string"))) {
    throw new Bad("entitlements", "must be a list of entitlement codes")
  }
  const settings: Partial<LicenseSettings> = {
    productId: optionalInt(row, "product_id"),
    orderId: optionalInt(row, "order_id"),
    userId: optionalInt(row, "user_id"),
    maxActivations: optionalInt(row, format === "lmfwc" ? "times_activated_max" : format === "dlm" ? "activations_limit" : "max_activations"),
    validForDays: optionalInt(row, woo ? "valid_for" : "valid_for_days"),
    expiresAt: optionalTime(row, "expires_at"),
    ...(graceDays === null ? {} : { graceDays }),
    ...(woo ? {} : given({
      overageStrategy: optionalChoice(row, "overage_strategy", overageStrategies),
      isFloating: optionalBool(row, "is_floating"),
      leaseDuration: optionalInt(row, "lease_duration") ?? undefined,
      requireHeartbeat: optionalBool(row, "require_heartbeat"),
      heartbeatInterval: optionalInt(row, "heartbeat_interval") ?? undefined,
      meta: optionalObject(row, "meta") as LicenseSettings["meta"] | undefined,
      entitlements: (entitlements ?? undefined) as ReadonlyArray<string> | undefined
    }))
  }
  const checked = checkLicenseSettings(settings)
  if (Result.isFailure(checked)) {
    const [field, message] = Object.entries(checked.failure.params ?? {})[0] ?? ["", checked.failure.message]
    throw new Bad(field, message)
  }
  return checked.success
}

/** A field of machine `j` of a row. */
const machineField = (list: string, j: number, field: string) => `${list}[${j}]${field === "" ? "" : `.${field}`}`

/** The components of an `lm`/`wplm` machine (as an activation reports them). */
const componentsOf = (machine: Row): ReadonlyArray<ComponentDraft> => {
  const value = machine.components
  if (value === undefined || value === null) return []
  if (!Array.isArray(value) || value.length > MAX_COMPONENTS) throw new Bad("components", `must be a list of at most ${MAX_COMPONENTS} components`)
  return value.map((component: unknown, k) => {
    const c = (typeof component === "object" && component !== null ? component : {}) as Row
    const kind = c.kind
    if (typeof kind !== "string" || !(componentKinds as ReadonlyArray<string>).includes(kind)) {
      throw new Bad(`components[${k}].kind`, `must be one of ${componentKinds.join(", ")}`)
    }
    if (typeof c.fingerprint !== "string" || !isFingerprint(c.fingerprint)) {
      throw new Bad(`components[${k}].fingerprint`, "must be 1 to 255 printable characters")
    }
    try {
      return { kind: kind as ComponentDraft["kind"], fingerprint: c.fingerprint, name: optionalText(c, "name") }
    } catch (error) {
      throw error instanceof Bad ? new Bad(`components[${k}].${error.field}`, error.message) : error
    }
  })
}

/** What a format calls a license's machines, and how one of them reads. */
interface MachineList {
  readonly name: string
  readonly read: (entry: unknown, at: (field: string) => string, now: number) => Omit<MachineDraft, "licenseId" | "seatDeadline">
}

const asRow = (entry: unknown, at: (field: string) => string): Row => {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) throw new Bad(at(""), "must be an object")
  return entry as Row
}

/** Reads one field of a machine, naming it `list[j].field` when it is bad. */
const within = <A>(at: (field: string) => string, read: () => A): A => {
  try {
    return read()
  } catch (error) {
    throw error instanceof Bad ? new Bad(at(error.field), error.message) : error
  }
}

const fingerprintOf = (row: Row, field: string): string => {
  const value = row[field]
  if (typeof value !== "string" || !isFingerprint(value)) throw new Bad(field, "must be 1 to 255 printable characters")
  return value
}

/** An `lm` machine (GET /licenses/{key}'s `machines`), or a `wplm` one (its statuses are numbers). */
const ownMachine = (format: "lm" | "wplm"): MachineList => ({
  name: "machines",
  read: (entry, at, now) => {
    const m = asRow(entry, at)
    const raw = m.status
    let status: MachineStatus = "active"
    if (raw !== undefined && raw !== null) {
      const found = format === "lm"
        ? (machineStatuses as ReadonlyArray<unknown>).includes(raw) ? raw as MachineStatus : undefined
        : wplmMachineStatuses.get((typeof raw === "string" ? Number(raw) : raw) as number)
      if (found === undefined) {
        throw new Bad(at("status"), format === "lm" ? `must be one of ${machineStatuses.join(", ")}` : "must be 1 (active), 2 (inactive) or 3 (revoked)")
      }
      status = found
    }
    return within(at, () => ({
      fingerprint: fingerprintOf(m, "fingerprint"),
      name: optionalText(m, "name"),
      hostname: optionalText(m, "hostname"),
      platform: optionalText(m, "platform"),
      appVersion: optionalText(m, "app_version"),
      ipAddress: optionalText(m, "ip_address", 45),
      status,
      activatedAt: optionalTime(m, "activated_at") ?? now,
      deactivatedAt: status === "active" ? null : optionalTime(m, "deactivated_at") ?? now,
      deactivationReason: status === "inactive" ? optionalChoice(m, "deactivation_reason", deactivationReasons) ?? "admin" : null,
      lastHeartbeatAt: optionalTime(m, "last_heartbeat_at"),
      leaseExpiresAt: optionalTime(m, "lease_expires_at"),
      meta: (optionalObject(m, "meta") ?? {}) as Machine["meta"],
      components: componentsOf(m),
      createdAt: optionalTime(m, "created_at") ?? now
    }))
  }
})

/** A WPLM registered device or domain: its id or name (a text, or an object naming it), an active machine. */
const registered = (name: "registered_devices" | "registered_domains"): MachineList => ({
  name,
  read: (entry, at, now) => {
    const text = typeof entry === "string" ? entry : typeof entry === "object" && entry !== null
      ? (entry as Row)[name === "registered_domains" ? "domain" : "device_id"] ?? (entry as Row).fingerprint
      : undefined
    if (typeof text !== "string" || !isFingerprint(text)) throw new Bad(at(""), "must be a text of 1 to 255 printable characters")
    const m = typeof entry === "object" && entry !== null ? entry as Row : {}
    return within(at, () => ({
      fingerprint: text,
      name: text,
      hostname: name === "registered_domains" ? text : null,
      platform: null,
      appVersion: null,
      ipAddress: optionalText(m, "ip_address", 45),
      status: "active" as const,
      activatedAt: optionalTime(m, "activated_at") ?? optionalTime(m, "created_at") ?? now,
      deactivatedAt: null,
      deactivationReason: null,
      lastHeartbeatAt: null,
      leaseExpiresAt: null,
      meta: {},
      components: [],
      createdAt: optionalTime(m, "created_at") ?? now
    }))
  }
})

/** A License Manager for WooCommerce / Digital License Manager activation: `token`, `label`, `ip_address`, times. */
const wooActivation: MachineList = {
  name: "activations",
  read: (entry, at, now) => {
    const a = asRow(entry, at)
    return within(at, () => {
      const deactivatedAt = optionalTime(a, "deactivated_at")
      const createdAt = optionalTime(a, "created_at") ?? now
      return {
        fingerprint: fingerprintOf(a, "token"),
        name: optionalText(a, "label"),
        hostname: null,
        platform: null,
        appVersion: null,
        ipAddress: optionalText(a, "ip_address", 45),
        status: deactivatedAt === null ? "active" as const : "inactive" as const,
        activatedAt: createdAt,
        deactivatedAt,
        deactivationReason: deactivatedAt === null ? null : "client" as DeactivationReason,
        lastHeartbeatAt: null,
        leaseExpiresAt: null,
        meta: {},
        components: [],
        createdAt
      }
    })
  }
}

const machineLists: Readonly<Record<ImportFormat, ReadonlyArray<MachineList>>> = {
  lm: [ownMachine("lm")],
  wplm: [ownMachine("wplm"), registered("registered_devices"), registered("registered_domains")],
  lmfwc: [wooActivation],
  dlm: [wooActivation],
  csv: []
}

/**
 * The machines a row of `format` carries, for `license`, each fingerprint once; refused when those active exceed
 * the license's seat ceiling at `now` (seats are counted exactly as an activation counts them).
 */
const machinesOf = (row: Row, format: ImportFormat, license: LicenseDraft, now: number): ReadonlyArray<Omit<MachineDraft, "licenseId">> => {
  const out: Array<Omit<MachineDraft, "licenseId">> = []
  const seen = new Set<string>()
  for (const list of machineLists[format]) {
    const entries = row[list.name]
    if (entries === undefined || entries === null) continue
    if (!Array.isArray(entries)) throw new Bad(list.name, "must be a list")
    if (out.length + entries.length > MAX_IMPORT_MACHINES_PER_LICENSE) {
      throw new Bad(list.name, `must hold at most ${MAX_IMPORT_MACHINES_PER_LICENSE} machines per license`)
    }
    entries.forEach((entry: unknown, j) => {
      const at = (field: string) => machineField(list.name, j, field)
      const read = list.read(entry, at, now)
      if (seen.has(read.fingerprint)) throw new Bad(at("fingerprint"), "appears twice on this license")
      seen.add(read.fingerprint)
      // An active machine of a floating license without a lease end starts a lease now, as an activation would.
      const machine = read.status === "active" && license.isFloating && read.leaseExpiresAt === null
        ? { ...read, leaseExpiresAt: now + license.leaseDuration * 1000 }
        : read
      out.push({ ...machine, seatDeadline: machine.status === "active" ? seatDeadline(machine, license) : null })
    })
  }
  const ceiling = seatCeiling(license.maxActivations, license.overageStrategy)
  const held = out.filter((machine) => holdsSeatByDeadline(machine, now)).length
  if (ceiling !== null && held > ceiling) {
    const names = machineLists[format].map((l) => l.name).filter((name) => Array.isArray(row[name]))
    throw new Bad(names[0] ?? "machines", `holds ${held} active machines, more than the ${ceiling} seats the license allows`)
  }
  return out
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
export const readImport = (format: ImportFormat, data: unknown, now: number): Result.Result<ReadonlyArray<ImportedLicense>, InvalidParam> => {
  const rows = format === "csv" ? (typeof data === "string" ? csvRows(data) : undefined) : Array.isArray(data) ? data : undefined
  if (rows === undefined) return Result.fail(invalidParam("data", format === "csv" ? "must be the CSV text" : "must be an array of licenses"))
  if (rows.length === 0) return Result.fail(invalidParam("data", "must hold at least one license"))
  if (rows.length > MAX_IMPORT_ROWS) return Result.fail(invalidParam("data", `must hold at most ${MAX_IMPORT_ROWS} licenses`))
  const drafts: Array<ImportedLicense> = []
  const params: Record<string, string> = {}
  const seen = new Set<string>()
  rows.forEach((row: unknown, i) => {
    try {
      if (typeof row !== "object" || row === null || Array.isArray(row)) throw new Bad("", "must be an object")
      const key = keyOf(row as Row)
      if (seen.has(key)) throw new Bad("license_key", "appears twice in the data")
      seen.add(key)
      const status = statusOf(row as Row, format)
      const fresh = newLicenseDraft(key, settingsOf(row as Row, format), "import", null, now, stateOfStatus(status))
      // A license that was activated there keeps when (its relative validity started then, not at its next activation).
      const activatedAt = format === "lmfwc" || format === "dlm" ? null : optionalTime(row as Row, "activated_at")
      const draft = activatedAt === null ? fresh : { ...fresh, activatedAt }
      drafts.push({ draft, machines: machinesOf(row as Row, format, draft, now) })
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
