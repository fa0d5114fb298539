/**
 * Key generators (CONTRACT §8): CRUD and bulk generation of `pending` keys into a generator's pool, and the
 * `GeneratorIssuer` through which `Licenses.create` makes a license with `generator_id` (drawn from the pool, or
 * minted in the generator's format).
 */
import { Clock, Context, Effect, Layer } from "effect"
import { type GeneratorNotFound, generatorNotFound, type LicenseExists } from "../licensing/errors.js"
import { checkKeyFormat, mintKey } from "../licensing/keys.js"
import { checkLicenseSettings, issueFromPool, licenseCreated, newLicenseDraft } from "../licensing/license.js"
import { type LicenseView, viewLicense } from "../licensing/machine.js"
import type { LicenseSettings, OverageStrategy } from "../licensing/model.js"
import { GeneratorIssuer, LicenseRepository, PolicyRepository } from "../licensing/ports.js"
import { invalidParam, type InvalidParam, type StorageUnavailable } from "../shared/errors.js"
import { EventOutbox, type Page, type PageRequest, Store } from "../shared/ports.js"
import { Random } from "../shared/random.js"
import { withPolicyDefaults } from "../licensing/Licenses.js"
import { effectiveEntitlements } from "../licensing/entitlements.js"
import type { PolicyNotFound } from "../licensing/errors.js"
import { generatorDefaults } from "./generator.js"
import type { Generator, GeneratorDraft } from "./model.js"
import { GeneratorRepository } from "./ports.js"

/** The fields a generator create or update may set. */
export interface GeneratorInput {
  readonly name?: string | undefined
  readonly charset?: string | undefined
  readonly chunkLength?: number | undefined
  readonly prefix?: string | undefined
  readonly productId?: number | null | undefined
  readonly defaultMaxActivations?: number | null | undefined
  readonly defaultValidDays?: number | null | undefined
  readonly defaultOverageStrategy?: OverageStrategy | null | undefined
  readonly defaultIsFloating?: boolean | null | undefined
}

/** A generator with its pool size. */
export interface GeneratorView {
  readonly generator: Generator
  readonly poolSize: number
}

/** The most keys one generate call makes. */
export const MAX_GENERATE = 10_000

export class Generators extends Context.Service<Generators, {
  readonly create: (input: GeneratorInput) => Effect.Effect<GeneratorView, InvalidParam | StorageUnavailable>
  readonly get: (id: number) => Effect.Effect<GeneratorView, GeneratorNotFound | StorageUnavailable>
  readonly list: (page: PageRequest) => Effect.Effect<Page<GeneratorView>, StorageUnavailable>
  readonly update: (id: number, input: GeneratorInput) => Effect.Effect<GeneratorView, GeneratorNotFound | InvalidParam | StorageUnavailable>
  /** Deletes the generator and its `pending` pool keys; issued licenses stay. */
  readonly delete: (id: number) => Effect.Effect<{ readonly id: number; readonly poolKeysDeleted: number }, GeneratorNotFound | StorageUnavailable>
  /** Mints `count` keys into the pool as `pending`, all or nothing. */
  readonly generate: (
    id: number,
    count: number,
    overrides: Partial<LicenseSettings>
  ) => Effect.Effect<ReadonlyArray<LicenseView>, GeneratorNotFound | PolicyNotFound | InvalidParam | LicenseExists | StorageUnavailable>
}>()("@lm/domain/Generators") {
  static readonly layer = Layer.effect(
    Generators,
    Effect.gen(function*() {
      const store = yield* Store
      const generators = yield* GeneratorRepository
      const licenses = yield* LicenseRepository
      const outbox = yield* EventOutbox
      const policies = yield* PolicyRepository
      const random = yield* Random

      const withPool = Effect.fnUntraced(function*(generator: Generator) {
        return { generator, poolSize: yield* licenses.poolSize(generator.id) }
      })

      const checked = Effect.fnUntraced(function*(draft: GeneratorDraft) {
        if (draft.name.trim() === "") return yield* invalidParam("name", "is required")
        const format = yield* Effect.fromResult(checkKeyFormat(draft))
        return { ...draft, name: draft.name.trim(), charset: format.charset }
      })

      const create = Effect.fn("Generators.create")(function*(input: GeneratorInput) {
        if (input.name === undefined) return yield* invalidParam("name", "is required")
        const now = yield* Clock.currentTimeMillis
        const draft = yield* checked({
          name: input.name,
          charset: input.charset ?? "ABCDEFGHJKLMNPQRSTUVWXYZ23456789",
          chunkLength: input.chunkLength ?? 4,
          prefix: input.prefix ?? "",
          productId: input.productId ?? null,
          defaultMaxActivations: input.defaultMaxActivations ?? null,
          defaultValidDays: input.defaultValidDays ?? null,
          defaultOverageStrategy: input.defaultOverageStrategy ?? null,
          defaultIsFloating: input.defaultIsFloating ?? null,
          createdAt: now,
          updatedAt: now
        })
        return { generator: yield* generators.insert(draft), poolSize: 0 }
      })

      const find = Effect.fnUntraced(function*(id: number) {
        const generator = yield* generators.findById(id)
        if (generator === undefined) return yield* generatorNotFound()
        return generator
      })

      const get = Effect.fn("Generators.get")(function*(id: number) {
        return yield* withPool(yield* find(id))
      })

      const list = Effect.fn("Generators.list")(function*(page: PageRequest) {
        const result = yield* generators.list(page)
        return { total: result.total, items: yield* Effect.forEach(result.items, withPool) }
      })

      const update = Effect.fn("Generators.update")(function*(id: number, input: GeneratorInput) {
        const current = yield* find(id)
        const now = yield* Clock.currentTimeMillis
        const defined = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined))
        const draft = yield* checked({ ...current, ...defined, updatedAt: now })
        return yield* withPool(yield* generators.update({ ...draft, id }))
      })

      const remove = Effect.fn("Generators.delete")(function*(id: number) {
        return yield* store.transaction(
          Effect.gen(function*() {
            yield* find(id)
            const poolKeysDeleted = yield* licenses.deletePool(id)
            yield* generators.delete(id)
            return { id, poolKeysDeleted }
          })
        )
      })

      const generate = Effect.fn("Generators.generate")(function*(id: number, count: number, overrides: Partial<LicenseSettings>) {
        if (!Number.isInteger(count) || count < 1 || count > MAX_GENERATE) {
          return yield* invalidParam("count", `must be an integer from 1 to ${MAX_GENERATE}`)
        }
        yield* Effect.fromResult(checkLicenseSettings(overrides))
        const generator = yield* find(id)
        const now = yield* Clock.currentTimeMillis
        const keys = new Set<string>()
        while (keys.size < count) keys.add(yield* mintKey(generator).pipe(Effect.provideService(Random, random)))
        return yield* store.transaction(
          Effect.gen(function*() {
            const settings = { ...generatorDefaults(generator), ...(yield* withPolicyDefaults(overrides)) }
            const drafts = [...keys].map((key) => newLicenseDraft(key, settings, "generator", id, now, "pending"))
            const policyCodes = settings.policyId == null ? undefined : (yield* policies.findById(settings.policyId))?.entitlements
            const created = yield* licenses.insertMany(drafts)
            yield* outbox.append([
              { type: "generator.keys_generated", occurredAt: now, licenseId: null, machineId: null, data: { generator_id: id, count } }
            ])
            return created.map((license) => ({
              ...viewLicense(license, [], now),
              effectiveEntitlements: effectiveEntitlements(license.entitlements, policyCodes)
            }))
          }).pipe(Effect.provideService(PolicyRepository, policies))
        )
      })

      return Generators.of({ create, get, list, update, delete: remove, generate })
    })
  )

  /**
   * The `GeneratorIssuer` of `Licenses.create` with `generator_id`: inside the caller's transaction, the oldest
   * `pending` key of the generator's pool is issued with the create's settings (FOR UPDATE SKIP LOCKED, so
   * concurrent creates draw different keys), or, with the pool empty, a key is minted in the generator's format
   * with its defaults under those settings.
   */
  static readonly layerIssuer = Layer.effect(
    GeneratorIssuer,
    Effect.gen(function*() {
      const generators = yield* GeneratorRepository
      const licenses = yield* LicenseRepository
      const outbox = yield* EventOutbox
      const random = yield* Random
      return {
        issue: Effect.fnUntraced(function*(generatorId: number, settings: Partial<LicenseSettings>, now: number) {
          const generator = yield* generators.findById(generatorId)
          if (generator === undefined) return yield* generatorNotFound()
          const pooled = yield* licenses.claimFromPool(generatorId)
          if (pooled !== undefined) {
            const drawn = issueFromPool(pooled, settings, now)
            const license = yield* licenses.update(drawn.license)
            yield* outbox.append(drawn.events)
            return license
          }
          const key = yield* mintKey(generator).pipe(Effect.provideService(Random, random))
          const merged = { ...generatorDefaults(generator), ...settings }
          const license = yield* licenses.insert(newLicenseDraft(key, merged, "generator", generatorId, now))
          yield* outbox.append([licenseCreated(license, now)])
          return license
        })
      }
    })
  )
}
