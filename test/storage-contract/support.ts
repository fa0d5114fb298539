/** What the storage contract's files share: the type of their `test`, and small helpers of the cases. */
import { assert } from "@effect/vitest"
import { Model, Ports } from "@lm/domain"
import { Cause, Effect, Exit, type Scope } from "effect"
import { keyOf, T0 } from "./fixtures.js"

/** Every port a store provides. */
export type StorePorts = Ports.StorePorts

/** Registers one case, run on a fresh, empty store (see `storageContract`). */
export type ContractTest = <A, E>(title: string, body: () => Effect.Effect<A, E, StorePorts | Scope.Scope>) => void

/** A typed failure of the cases' own, to roll a transaction back with. */
export class Boom {
  readonly _tag = "Boom"
}

/**
 * The same service, but every operation lets other fibers run after it: concurrent flows then interleave at
 * each store call on every store (a store that answers synchronously would otherwise run them one by one).
 */
export const yielding = <S extends object>(service: S): S =>
  new Proxy(service, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name)
      if (typeof value === "function") {
        return (...args: Array<unknown>) => Effect.tap(value.apply(target, args) as Effect.Effect<unknown>, () => Effect.yieldNow)
      }
      return Effect.isEffect(value) ? Effect.tap(value, () => Effect.yieldNow) : value
    }
  })

/** How many transactions the store wrapped by {@link counting} began. */
export const transactions = { count: 0 }

/** The same store, counting its (outermost or nested) transactions in {@link transactions}. */
export const counting = (store: Ports.Store["Service"]): Ports.Store["Service"] =>
  Ports.Store.of({
    ...store,
    transaction: (effect) => Effect.suspend(() => {
      transactions.count++
      return store.transaction(effect)
    })
  })

/** An event about a machine, as the seat changes write them. */
export const seatEvent = (type: Model.DomainEvent["type"], licenseId: number, machineId: number, fingerprint: string): Model.DomainEvent => ({
  type,
  occurredAt: T0 + 1,
  licenseId,
  machineId,
  data: { license_key: keyOf(licenseId), fingerprint }
})

export const isPositiveInt = (n: number) => Number.isInteger(n) && n > 0

/** The typed error an effect failed with (fails the test when it succeeded or died instead). */
export const failureOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    assert.isTrue(Exit.isFailure(exit), "expected a failure")
    if (Exit.isSuccess(exit)) throw new Error("unreachable")
    const error = Cause.squash(exit.cause)
    return error as E
  })
