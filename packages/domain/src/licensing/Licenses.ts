/**
 * License management (CONTRACT §3): create (plain, with a given key, or from a generator or its pool through the
 * `GeneratorIssuer` the generators feature provides), get, list, update, delete and the actions. Every write runs
 * in a transaction with the license locked and writes the events it causes to the outbox.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { invalidParam, type InvalidParam, type InvalidTransition, type StorageUnavailable } from "../shared/errors.js"
import type { DomainEvent } from "../shared/model.js"
import { BulkWrite, EventOutbox, type Page, Store } from "../shared/ports.js"
import { Random } from "../shared/random.js"
import {
  type ConfirmationRequired,
  type GeneratorNotFound,
  type LicenseExists,
  type LicenseNotFound,
  licenseNotFound,
  type LicenseTerminated,
  type PolicyNotFound,
  policyNotFound
} from "./errors.js"
import { type ImportFormat, readImport } from "./importing.js"
import { defaultKeyFormat, mintKey, parseKey, parseKeyPrefix, parseNewKey } from "./keys.js"
import {
  applyLicenseAction,
  checkLicenseSettings,
  confirmTermination,
  defaultLicenseSettings,
  licenseCreated,
  licenseDeleted,
  type LicenseChange,
  newLicenseDraft,
  policyDefaults,
  renewLicense,
  type Renewal,
  terminateLicense,
  updateLicense
} from "./license.js"
import { countSeatsHeld, deactivateMachine, type LicenseView, refreshSeatDeadlines, viewLicense } from "./machine.js"
import type { License, LicenseSettings, LicenseSource, LicenseStatus, Machine, MachineDraft } from "./model.js"
import { effectiveEntitlements } from "./entitlements.js"
import { GeneratorIssuer, type LicenseFilter, type LicenseQuery, LicenseRepository, MachineRepository, PolicyRepository } from "./ports.js"

/** Fields a create may set: a key or a generator (not both), and any writable setting. */
export interface CreateLicenseInput extends Partial<LicenseSettings> {
  readonly licenseKey?: string | undefined
  readonly generatorId?: number | undefined
  readonly source?: LicenseSource | undefined
}

/** GET /licenses filters, already decoded. */
/**
 * The stored filters of a derived status at `now`: `expired` = state `issued` whose grace period ended;
 * `active`/`inactive` = `issued`, not expired, with/without a seat holder; the other statuses are states.
 */
export const statusFilter = (status: LicenseStatus | undefined, now: number): LicenseFilter => {
  switch (status) {
    case undefined:
      return {}
    case "active":
    case "inactive":
      return { states: ["issued"], expiredAt: { at: now, value: false }, hasSeatHolderAt: { at: now, value: status === "active" } }
    case "expired":
      return { states: ["issued"], expiredAt: { at: now, value: true } }
    default:
      return { states: [status] }
  }
}

export interface ListLicensesInput {
  readonly status?: LicenseStatus | undefined
  readonly productId?: number | undefined
  readonly orderId?: number | undefined
  readonly userId?: number | undefined
  readonly generatorId?: number | undefined
  readonly search?: string | undefined
  /** Only licenses whose id is above this (keyset paging; with `orderBy: "id"`, `order: "asc"`). */
  readonly idAfter?: number | undefined
  readonly expiresBefore?: number | undefined
  readonly expiresAfter?: number | undefined
  readonly orderBy?: LicenseQuery["orderBy"] | undefined
  readonly order?: LicenseQuery["order"] | undefined
  readonly page: number
  readonly perPage: number
}

/** The filters of `GET /licenses/export` (those of GET /licenses), and where its next page starts. */
export type ExportLicensesInput = Omit<ListLicensesInput, "orderBy" | "order" | "page" | "perPage" | "idAfter"> & {
  /** The last id of the page before (0 for the first). */
  readonly idAfter: number
  readonly limit: number
}

/** A license with its machines (GET /licenses/{key}). */
export interface LicenseDetail extends LicenseView {
  readonly machines: ReadonlyArray<Machine>
}

type WriteError = LicenseNotFound | LicenseTerminated | StorageUnavailable

/**
 * The settings of a create or a move to another policy: the policy's defaults under the given ones (the body's
 * fields win, as with generator defaults). The policy is locked until the transaction ends, so that a concurrent
 * delete of it either waits for this license or is seen by it (`policy_in_use` / `policy_not_found`).
 */
export const withPolicyDefaults = Effect.fnUntraced(function*(settings: Partial<LicenseSettings>) {
  if (settings.policyId === undefined || settings.policyId === null) return settings
  const policy = yield* (yield* PolicyRepository).lockById(settings.policyId)
  if (policy === undefined) return yield* policyNotFound()
  return { ...policyDefaults(policy), ...settings }
})

/** Imported machines written per statement. */
const IMPORT_MACHINE_BATCH = 2000

const settingsOf = (input: Partial<LicenseSettings>): Partial<LicenseSettings> => {
  const out: Record<string, unknown> = {}
  for (const name of Object.keys(defaultLicenseSettings) as Array<keyof LicenseSettings>) {
    if (input[name] !== undefined) out[name] = input[name]
  }
  return out as Partial<LicenseSettings>
}

export class Licenses extends Context.Service<Licenses, {
  readonly create: (
    input: CreateLicenseInput
  ) => Effect.Effect<LicenseView, InvalidParam | LicenseExists | GeneratorNotFound | PolicyNotFound | StorageUnavailable>
  readonly get: (key: string) => Effect.Effect<LicenseDetail, InvalidParam | LicenseNotFound | StorageUnavailable>
  /** The licenses that match; `search` with a non-ASCII character is `InvalidParam`. */
  readonly list: (input: ListLicensesInput) => Effect.Effect<Page<LicenseView>, InvalidParam | StorageUnavailable>
  /**
   * The next page of an export (CONTRACT §17): up to `limit` licenses after `idAfter`, in id order, each with every
   * machine it has (in any status), as `POST /licenses/import` reads them back. Nothing is counted, so each page
   * costs the same however many licenses there are.
   */
  readonly exportPage: (input: ExportLicensesInput) => Effect.Effect<ReadonlyArray<LicenseDetail>, InvalidParam | StorageUnavailable>
  readonly update: (key: string, patch: Partial<LicenseSettings>) => Effect.Effect<LicenseView, InvalidParam | PolicyNotFound | WriteError>
  readonly delete: (key: string) => Effect.Effect<{ readonly id: number }, InvalidParam | LicenseNotFound | StorageUnavailable>
  readonly renew: (key: string, renewal: Renewal) => Effect.Effect<LicenseView, InvalidParam | WriteError>
  readonly suspend: (key: string) => Effect.Effect<LicenseView, InvalidParam | InvalidTransition | WriteError>
  readonly revoke: (key: string) => Effect.Effect<LicenseView, InvalidParam | InvalidTransition | WriteError>
  readonly reinstate: (key: string) => Effect.Effect<LicenseView, InvalidParam | InvalidTransition | WriteError>
  readonly terminate: (key: string, confirm: boolean) => Effect.Effect<LicenseView, InvalidParam | ConfirmationRequired | WriteError>
  /**
   * Imports an export of another licensing system (CONTRACT §17, `importing.ts`), all or nothing, in one
   * transaction with a `license.created` event each (their machines are recorded as they were, without events):
   * the number of licenses and machines imported, or every bad row named, or
   * `LicenseExists` when a key is already stored.
   */
  readonly importLicenses: (
    format: ImportFormat,
    data: unknown
  ) => Effect.Effect<{ readonly imported: number; readonly machines: number }, InvalidParam | LicenseExists | StorageUnavailable>
}>()("@lm/domain/Licenses") {
  /** The service on the ports; creates with `generator_id` go to the `GeneratorIssuer` in context when it is built. */
  static readonly layer = Layer.effect(
    Licenses,
    Effect.gen(function*() {
      const store = yield* Store
      const licenses = yield* LicenseRepository
      const machines = yield* MachineRepository
      const generators = yield* GeneratorIssuer
      const outbox = yield* EventOutbox
      const policies = yield* PolicyRepository
      const random = yield* Random
      const withRandom = Effect.provideService(Random, random)

      const keyOf = (input: string) => Effect.fromResult(parseKey(input))

      /** The view of each license with its effective entitlements (its policy's codes read once per policy). */
      const viewAll = Effect.fnUntraced(function*(
        items: ReadonlyArray<{ readonly license: License; readonly active: ReadonlyArray<Machine> }>,
        now: number
      ) {
        const codes = new Map<number, ReadonlyArray<string> | undefined>()
        for (const { license } of items) {
          if (license.policyId !== null && !codes.has(license.policyId)) {
            codes.set(license.policyId, (yield* policies.findById(license.policyId))?.entitlements)
          }
        }
        return items.map(({ active, license }): LicenseView => ({
          ...viewLicense(license, active, now),
          effectiveEntitlements: effectiveEntitlements(license.entitlements, license.policyId === null ? undefined : codes.get(license.policyId))
        }))
      })
      const view = (license: License, active: ReadonlyArray<Machine>, now: number) =>
        Effect.map(viewAll([{ license, active }], now), (views) => views[0]!)

      /** Runs a change on the locked license and persists it with its events. */
      const write = <E>(key: string, change: (license: License, now: number, active: ReadonlyArray<Machine>) => Effect.Effect<LicenseChange, E>) =>
        Effect.gen(function*() {
          const normalized = yield* keyOf(key)
          return yield* store.transaction(
            Effect.gen(function*() {
              const license = yield* licenses.lockByKey(normalized)
              if (license === undefined) return yield* licenseNotFound()
              const active = yield* machines.listActive(license.id)
              const now = yield* Clock.currentTimeMillis
              const result = yield* change(license, now, active)
              if (!result.changed) return yield* view(license, active, now)
              const saved = yield* licenses.update(result.license)
              yield* outbox.append(result.events)
              return yield* view(saved, yield* machines.listActive(license.id), now)
            })
          )
        })

      const create = Effect.fn("Licenses.create")(function*(input: CreateLicenseInput) {
        if (input.licenseKey !== undefined && input.generatorId !== undefined) {
          return yield* invalidParam("generator_id", "send either license_key or generator_id, not both")
        }
        const now = yield* Clock.currentTimeMillis
        const given = yield* Effect.fromResult(checkLicenseSettings(settingsOf(input)))
        if (input.generatorId !== undefined) {
          const generatorId = input.generatorId
          return yield* store.transaction(
            Effect.gen(function*() {
              const license = yield* generators.issue(generatorId, yield* withPolicyDefaults(given), now)
              return yield* view(license, [], now)
            }).pipe(Effect.provideService(PolicyRepository, policies))
          )
        }
        const key = input.licenseKey !== undefined ? yield* Effect.fromResult(parseNewKey(input.licenseKey)) : yield* withRandom(mintKey(defaultKeyFormat))
        return yield* store.transaction(
          Effect.gen(function*() {
            const settings = yield* withPolicyDefaults(given)
            const license = yield* licenses.insert(newLicenseDraft(key, settings, input.source ?? "api", null, now))
            yield* outbox.append([licenseCreated(license, now)])
            return yield* view(license, [], now)
          }).pipe(Effect.provideService(PolicyRepository, policies))
        )
      })

      const get = Effect.fn("Licenses.get")(function*(key: string) {
        const normalized = yield* keyOf(key)
        const license = yield* licenses.findByKey(normalized)
        if (license === undefined) return yield* licenseNotFound()
        const all = yield* machines.list(license.id, { page: 1, perPage: 1000 })
        const now = yield* Clock.currentTimeMillis
        return { ...(yield* view(license, all.items.filter((m) => m.status === "active"), now)), machines: all.items }
      })

      /** The store's query of a list's filters at `now`. */
      const queryOf = Effect.fnUntraced(function*(input: ListLicensesInput, now: number) {
        const derived = statusFilter(input.status, now)
        return {
          ...derived,
          productId: input.productId,
          orderId: input.orderId,
          userId: input.userId,
          generatorId: input.generatorId,
          keyPrefix: input.search === undefined ? undefined : yield* Effect.fromResult(parseKeyPrefix(input.search, "search")),
          expiresBefore: input.expiresBefore,
          expiresAfter: input.expiresAfter,
          idAfter: input.idAfter,
          orderBy: input.orderBy ?? "id",
          order: input.order ?? "desc",
          page: input.page,
          perPage: input.perPage
        } satisfies LicenseQuery
      })

      const list = Effect.fn("Licenses.list")(function*(input: ListLicensesInput) {
        const now = yield* Clock.currentTimeMillis
        const page = yield* licenses.list(yield* queryOf(input, now))
        const active = yield* machines.listActiveOf(page.items.map((l) => l.id))
        return {
          total: page.total,
          items: yield* viewAll(page.items.map((license) => ({ license, active: active.filter((m) => m.licenseId === license.id) })), now)
        }
      })

      const exportPage = Effect.fn("Licenses.exportPage")(function*(input: ExportLicensesInput) {
        const now = yield* Clock.currentTimeMillis
        const query = yield* queryOf({ ...input, orderBy: "id", order: "asc", page: 1, perPage: input.limit }, now)
        const page = yield* licenses.list({ ...query, withTotal: false })
        const all = yield* machines.listOf(page.items.map((l) => l.id))
        const byLicense = new Map<number, Array<Machine>>()
        for (const machine of all) {
          const list = byLicense.get(machine.licenseId)
          if (list === undefined) byLicense.set(machine.licenseId, [machine])
          else list.push(machine)
        }
        const items = page.items.map((license) => ({ license, machines: byLicense.get(license.id) ?? [] }))
        const views = yield* viewAll(items.map(({ license, machines }) => ({ license, active: machines.filter((m) => m.status === "active") })), now)
        return views.map((view, i): LicenseDetail => ({ ...view, machines: items[i]!.machines }))
      })

      const update = Effect.fn("Licenses.update")(function*(key: string, patch: Partial<LicenseSettings>) {
        return yield* write(key, (license, now, active) =>
          Effect.gen(function*() {
            const given = yield* Effect.fromResult(checkLicenseSettings(settingsOf(patch)))
            // Moved to another policy: its defaults come with it, under the patch's own fields.
            const settings = given.policyId !== undefined && given.policyId !== license.policyId
              ? yield* withPolicyDefaults(given).pipe(Effect.provideService(PolicyRepository, policies))
              : given
            const change = yield* Effect.fromResult(updateLicense(license, settings, now))
            // Seat rules may have changed: keep each machine's stored seat deadline true to them.
            for (const machine of refreshSeatDeadlines(active, change.license, now)) yield* machines.update(machine)
            return change
          })
        )
      })

      const remove = Effect.fn("Licenses.delete")(function*(key: string) {
        const normalized = yield* keyOf(key)
        return yield* store.transaction(
          Effect.gen(function*() {
            const license = yield* licenses.lockByKey(normalized)
            if (license === undefined) return yield* licenseNotFound()
            const now = yield* Clock.currentTimeMillis
            yield* licenses.delete(license.id)
            yield* outbox.append([licenseDeleted(license, now)])
            return { id: license.id }
          })
        )
      })

      const action = (name: "suspend" | "revoke" | "reinstate") =>
        Effect.fn(`Licenses.${name}`)(function*(key: string) {
          return yield* write(key, (license, now, active) =>
            Effect.fromResult(applyLicenseAction(license, name, now, countSeatsHeld(active, license, now)))
          )
        })

      const terminate = Effect.fn("Licenses.terminate")(function*(key: string, confirm: boolean) {
        // Before the key is even read: without the flag nothing else is looked at.
        yield* Effect.fromResult(confirmTermination(confirm))
        return yield* write(key, (license, now, active) =>
          Effect.gen(function*() {
            const change = yield* Effect.fromResult(terminateLicense(license, confirm, now))
            if (!change.changed) return change
            const events: Array<DomainEvent> = [...change.events]
            for (const machine of active) {
              const off = deactivateMachine(change.license, machine, "license_terminated", now)
              yield* machines.update(off.machine)
              events.push(...off.events)
            }
            return { ...change, events }
          })
        )
      })

      const renew = Effect.fn("Licenses.renew")(function*(key: string, renewal: Renewal) {
        return yield* write(key, (license, now) => Effect.fromResult(renewLicense(license, renewal, now)))
      })

      const importLicenses = Effect.fn("Licenses.importLicenses")(function*(format: ImportFormat, data: unknown) {
        const now = yield* Clock.currentTimeMillis
        const imported = yield* Effect.fromResult(readImport(format, data, now))
        return yield* store.transaction(
          Effect.gen(function*() {
            const saved = yield* licenses.insertMany(imported.map((i) => i.draft))
            const idOf = new Map(saved.map((license) => [license.key, license.id]))
            const drafts = imported.flatMap((i) => i.machines.map((m): MachineDraft => ({ ...m, licenseId: idOf.get(i.draft.key)! })))
            // Machines without components in batches of one statement each; those with components one by one.
            const plain = drafts.filter((m) => m.components.length === 0)
            for (let i = 0; i < plain.length; i += IMPORT_MACHINE_BATCH) {
              yield* machines.writeSeatChanges({ inserts: plain.slice(i, i + IMPORT_MACHINE_BATCH), updates: [], events: [] })
            }
            for (const machine of drafts) if (machine.components.length > 0) yield* machines.insert(machine)
            yield* outbox.append(saved.map((license) => licenseCreated(license, now)))
            return { imported: saved.length, machines: drafts.length }
          })
        ).pipe(Effect.provideService(BulkWrite, true))
      })

      return Licenses.of({
        importLicenses,
        create,
        get,
        list,
        exportPage,
        update,
        delete: remove,
        renew,
        suspend: action("suspend"),
        revoke: action("revoke"),
        reinstate: action("reinstate"),
        terminate
      })
    })
  )
}

