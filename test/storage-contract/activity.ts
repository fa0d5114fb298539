/** The storage contract of ActivityLog: the event log and its retention. */
import { assert, describe } from "@effect/vitest"
import { Model, Ports } from "@lm/domain"
import { Effect } from "effect"
import { activity, DAY, T0 } from "./fixtures.js"
import type { ContractTest } from "./support.js"

export const activityLogCases = (test: ContractTest): void => {
  describe("event log", () => {
    test("the activity log keeps entries and counts them, by license when asked", () =>
      Effect.gen(function*() {
        const log = yield* Ports.ActivityLog
        assert.strictEqual(yield* log.count({}), 0)
        yield* log.record([activity(1), activity(1, "license_expired"), activity(2), activity(null, "license_not_found")])
        yield* log.record([])
        yield* log.record([activity(2)])
        assert.strictEqual(yield* log.count({}), 5)
        assert.strictEqual(yield* log.count({ licenseId: 1 }), 2)
        assert.strictEqual(yield* log.count({ licenseId: 2 }), 2)
        assert.strictEqual(yield* log.count({ licenseId: 3 }), 0)
      }))

    test("prune deletes at most `limit` entries older than the time, oldest first, and answers how many", () =>
      Effect.gen(function*() {
        const log = yield* Ports.ActivityLog
        const at = (licenseId: number, time: number): Model.ActivityEntry => ({ ...activity(licenseId), at: time })
        // Written in time order, one batch per day, as the recorder writes them.
        yield* log.record([at(1, T0 - 3 * DAY), at(2, T0 - 3 * DAY)])
        yield* log.record([at(1, T0 - 2 * DAY)])
        yield* log.record([at(1, T0 - DAY), at(2, T0 - DAY)])
        yield* log.record([at(1, T0)])
        const cutoff = T0 - DAY
        assert.strictEqual(yield* log.prune(cutoff, 2), 2)
        assert.strictEqual(yield* log.count({}), 4)
        assert.strictEqual(yield* log.count({ licenseId: 2 }), 1, "the oldest went first")
        assert.strictEqual(yield* log.prune(cutoff, 2), 1, "fewer than the limit: none older is left")
        assert.strictEqual(yield* log.prune(cutoff, 2), 0)
        // Entries at or after the time stay.
        assert.strictEqual(yield* log.count({}), 3)
        assert.strictEqual(yield* log.count({ licenseId: 1 }), 2)
        assert.strictEqual(yield* log.count({ licenseId: 2 }), 1)
        assert.strictEqual(yield* log.prune(T0 + 1, 1_000), 3)
        assert.strictEqual(yield* log.count({}), 0)
      }))
  })
}
