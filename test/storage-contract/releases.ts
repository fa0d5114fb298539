/** The storage contract of ReleaseRepository. */
import { assert, describe } from "@effect/vitest"
import { Model, Ports, ReleaseRules } from "@lm/domain"
import { Effect } from "effect"
import { DAY, event, T0 } from "./fixtures.js"
import { type ContractTest, failureOf, isPositiveInt } from "./support.js"

export const releaseCases = (test: ContractTest): void => {
  describe("releases", () => {
    const releaseDraft = (productId: number, version: string, overrides: Partial<Model.ReleaseDraft> = {}): Model.ReleaseDraft => ({
      productId,
      version,
      versionKey: ReleaseRules.versionSortKey(ReleaseRules.strictVersion(version)!),
      channel: "stable",
      changelog: null,
      minAppVersion: null,
      filename: null,
      size: null,
      sha256: null,
      contentType: null,
      artifactUrl: null,
      artifactKey: null,
      releasedAt: T0,
      createdAt: T0,
      entitlements: [],
      ...overrides
    })

    test("insert and find round-trip every field; the same product and version again is ReleaseExists, rolled back", () =>
      Effect.gen(function*() {
        const releases = yield* Ports.ReleaseRepository
        const store = yield* Ports.Store
        const outbox = yield* Ports.EventOutbox
        const full = releaseDraft(7, "1.2.3+build.5", {
          channel: "beta",
          changelog: "Fixes",
          minAppVersion: "1.0.0",
          filename: "app-1.2.3.tar.gz",
          size: 5_000_000_000,
          sha256: "a".repeat(64),
          contentType: "application/gzip",
          entitlements: ["export", "pro:updates"],
          artifactKey: "ab/cdef",
          releasedAt: T0 - DAY,
          createdAt: T0 + 1
        })
        const r1 = yield* releases.insert(full)
        assert.isTrue(isPositiveInt(r1.id))
        assert.deepStrictEqual(r1, { ...full, id: r1.id })
        assert.deepStrictEqual(yield* releases.findById(r1.id), r1)
        assert.deepStrictEqual(yield* releases.findByVersion(7, "1.2.3+build.5"), r1)
        assert.isUndefined(yield* releases.findByVersion(8, "1.2.3+build.5"))
        const external = yield* releases.insert(releaseDraft(8, "1.2.3+build.5", { artifactUrl: "https://cdn.example.com/a.zip" }))
        assert.strictEqual(external.artifactUrl, "https://cdn.example.com/a.zip")
        const before = (yield* outbox.readAfter(0, 100)).length
        const failed = yield* failureOf(store.transaction(Effect.andThen(
          outbox.append([event("license.created", 1)]),
          releases.insert(releaseDraft(7, "1.2.3+build.5"))
        )))
        assert.strictEqual(failed._tag, "ReleaseExists")
        assert.strictEqual((yield* outbox.readAfter(0, 100)).length, before)
        assert.strictEqual((yield* releases.list({ page: 1, perPage: 10 })).total, 2)
      }))

    test("lists newest semver first (pre-releases below their release, numeric identifiers by number), filtered", () =>
      Effect.gen(function*() {
        const releases = yield* Ports.ReleaseRepository
        const inserted: Array<[string, Model.ReleaseChannel]> = [
          ["1.0.0", "stable"],
          ["10.0.0", "stable"],
          ["2.0.0-rc.10", "rc"],
          ["2.0.0-rc.2", "rc"],
          ["2.0.0-beta", "beta"],
          ["2.0.0-beta.1", "beta"],
          ["2.0.0-alpha", "alpha"],
          ["2.0.0-1", "dev"],
          ["2.0.0", "stable"],
          ["1.10.0", "stable"],
          ["1.9.0", "stable"]
        ]
        for (const [version, channel] of inserted) yield* releases.insert(releaseDraft(1, version, { channel }))
        yield* releases.insert(releaseDraft(2, "99.0.0"))
        const all = yield* releases.list({ productId: 1, page: 1, perPage: 100 })
        assert.deepStrictEqual(all.items.map((r) => r.version), [
          "10.0.0",
          "2.0.0",
          "2.0.0-rc.10",
          "2.0.0-rc.2",
          "2.0.0-beta.1",
          "2.0.0-beta",
          "2.0.0-alpha",
          "2.0.0-1",
          "1.10.0",
          "1.9.0",
          "1.0.0"
        ])
        assert.strictEqual(all.total, 11)
        const stableAndRc = yield* releases.list({ productId: 1, channels: ["stable", "rc"], page: 2, perPage: 3 })
        assert.deepStrictEqual(stableAndRc.items.map((r) => r.version), ["2.0.0-rc.2", "1.10.0", "1.9.0"])
        assert.strictEqual(stableAndRc.total, 7)
        assert.strictEqual((yield* releases.list({ channels: [], page: 1, perPage: 10 })).total, 0)
        assert.strictEqual((yield* releases.list({ page: 1, perPage: 10 })).total, 12)
      }))

    test("delete removes a release from lookups and lists (its version free again); a transaction that fails keeps it", () =>
      Effect.gen(function*() {
        const releases = yield* Ports.ReleaseRepository
        const store = yield* Ports.Store
        const kept = yield* releases.insert(releaseDraft(3, "1.0.0"))
        const gone = yield* releases.insert(releaseDraft(3, "2.0.0"))
        const rolledBack = yield* store.transaction(Effect.andThen(releases.delete(kept.id), Effect.fail("undo" as const))).pipe(Effect.flip)
        assert.strictEqual(rolledBack, "undo")
        assert.isTrue(yield* releases.delete(gone.id))
        assert.isFalse(yield* releases.delete(gone.id))
        assert.isUndefined(yield* releases.findById(gone.id))
        assert.isUndefined(yield* releases.findByVersion(3, "2.0.0"))
        assert.deepStrictEqual((yield* releases.list({ productId: 3, page: 1, perPage: 10 })).items.map((r) => r.id), [kept.id])
        assert.strictEqual((yield* releases.insert(releaseDraft(3, "2.0.0"))).version, "2.0.0")
      }))
  })
}
