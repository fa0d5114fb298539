/**
 * Policies (CONTRACT §15): CRUD, and `apply`, which copies a policy's settings into every license of it in one
 * transaction. Each write runs with the policy locked, re-reads it, applies the pure rules (`policy.ts`) and
 * persists with its outbox event. A policy's entitlement codes are live: licenses read them through the policy
 * (see `Licensing.validate` and the validation cache), so a change needs no write to its licenses.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { refreshSeatDeadlines } from "../licensing/machine.js"
import { type PolicyInUse, type PolicyNotFound, policyNotFound } from "../licensing/errors.js"
import type { Policy } from "../licensing/model.js"
import { LicenseRepository, MachineRepository, PolicyRepository } from "../licensing/ports.js"
import { invalidParam, type InvalidParam, type StorageUnavailable } from "../shared/errors.js"
import { givenOf } from "../shared/feature.js"
import type { DomainEvent } from "../shared/model.js"
import { EventOutbox, type Page, type PageRequest, Store } from "../shared/ports.js"
import { applyPolicy, checkPolicy, defaultPolicySettings, type PolicyInput, policyEvent } from "./policy.js"

export type { PolicyInput } from "./policy.js"

/** A policy with how many licenses refer to it. */
export interface PolicyView {
  readonly policy: Policy
  readonly licenseCount: number
}

export interface ListPoliciesInput extends PageRequest {
  readonly productId?: number | undefined
}

export class Policies extends Context.Service<Policies, {
  readonly create: (input: PolicyInput) => Effect.Effect<PolicyView, InvalidParam | StorageUnavailable>
  readonly get: (id: number) => Effect.Effect<PolicyView, PolicyNotFound | StorageUnavailable>
  readonly list: (input: ListPoliciesInput) => Effect.Effect<Page<PolicyView>, StorageUnavailable>
  readonly update: (id: number, input: PolicyInput) => Effect.Effect<PolicyView, PolicyNotFound | InvalidParam | StorageUnavailable>
  /** Deletes the policy; `policy_in_use` while a license refers to it. */
  readonly delete: (id: number) => Effect.Effect<{ readonly id: number }, PolicyNotFound | PolicyInUse | StorageUnavailable>
  /** Copies the policy's settings into every license of it, in one transaction; answers how many changed. */
  readonly apply: (id: number) => Effect.Effect<{ readonly updated: number }, PolicyNotFound | StorageUnavailable>
}>()("@lm/domain/Policies") {
  static readonly layer = Layer.effect(
    Policies,
    Effect.gen(function*() {
      const store = yield* Store
      const policies = yield* PolicyRepository
      const licenses = yield* LicenseRepository
      const machines = yield* MachineRepository
      const outbox = yield* EventOutbox

      const withCount = Effect.fnUntraced(function*(policy: Policy) {
        const [licenseCount = 0] = yield* policies.licenseCounts([policy.id])
        return { policy, licenseCount }
      })

      const create = Effect.fn("Policies.create")(function*(input: PolicyInput) {
        if (input.name === undefined) return yield* invalidParam("name", "is required")
        const now = yield* Clock.currentTimeMillis
        const draft = yield* Effect.fromResult(checkPolicy({
          ...defaultPolicySettings,
          productId: null,
          entitlements: [],
          ...givenOf(input),
          name: input.name,
          createdAt: now,
          updatedAt: now
        }))
        return yield* store.transaction(
          Effect.gen(function*() {
            const policy = yield* policies.insert(draft)
            yield* outbox.append([policyEvent("policy.created", policy, now)])
            return { policy, licenseCount: 0 }
          })
        )
      })

      const locked = Effect.fnUntraced(function*(id: number) {
        const policy = yield* policies.lockById(id)
        if (policy === undefined) return yield* policyNotFound()
        return policy
      })

      const get = Effect.fn("Policies.get")(function*(id: number) {
        const policy = yield* policies.findById(id)
        if (policy === undefined) return yield* policyNotFound()
        return yield* withCount(policy)
      })

      const list = Effect.fn("Policies.list")(function*(input: ListPoliciesInput) {
        const page = yield* policies.list(input)
        const counts = yield* policies.licenseCounts(page.items.map((p) => p.id))
        return { total: page.total, items: page.items.map((policy, i) => ({ policy, licenseCount: counts[i] ?? 0 })) }
      })

      const update = Effect.fn("Policies.update")(function*(id: number, input: PolicyInput) {
        return yield* store.transaction(
          Effect.gen(function*() {
            const current = yield* locked(id)
            const now = yield* Clock.currentTimeMillis
            const draft = yield* Effect.fromResult(checkPolicy({ ...current, ...givenOf(input), updatedAt: now }))
            const policy = yield* policies.update({ ...draft, id })
            yield* outbox.append([policyEvent("policy.updated", policy, now)])
            return yield* withCount(policy)
          })
        )
      })

      const remove = Effect.fn("Policies.delete")(function*(id: number) {
        return yield* store.transaction(
          Effect.gen(function*() {
            const policy = yield* locked(id)
            const now = yield* Clock.currentTimeMillis
            yield* policies.delete(id)
            yield* outbox.append([policyEvent("policy.deleted", policy, now)])
            return { id }
          })
        )
      })

      const apply = Effect.fn("Policies.apply")(function*(id: number) {
        return yield* store.transaction(
          Effect.gen(function*() {
            const policy = yield* locked(id)
            const now = yield* Clock.currentTimeMillis
            const events: Array<DomainEvent> = []
            let updated = 0
            for (const license of yield* policies.lockLicenses(id)) {
              const change = applyPolicy(license, policy, now)
              if (change === null) continue
              yield* licenses.update(change.license)
              // Seat rules may have changed: keep each machine's stored seat deadline true to them.
              for (const machine of refreshSeatDeadlines(yield* machines.listActive(license.id), change.license, now)) {
                yield* machines.update(machine)
              }
              events.push(...change.events)
              updated++
            }
            yield* outbox.append(events)
            return { updated }
          })
        )
      })

      return Policies.of({ create, get, list, update, delete: remove, apply })
    })
  )
}
