/**
 * Releases and licensed updates (CONTRACT §9) through the services on the memory store: strict semver, 409
 * `release_exists`, `release.published` in the outbox, which release an update check offers (channels,
 * `min_app_version`), which product's releases a license sees (its own only; none without a product), and the
 * download token's checks (tampered, expired, license revoked or moved to another product after the check).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Result } from "effect"
import { TestClock } from "effect/testing"
import { ActivityRecorder, Licenses, Licensing, Ports, ReleaseRules, Releases, Signer } from "@lm/domain"
import { onEngine } from "./engine.js"

const releasesLayer = Releases.layer({ downloadTokenTtlSeconds: 60 }).pipe(Layer.provide(Signer.layerNodeCrypto(new Uint8Array(32).fill(7))))

const onReleases = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  onEngine(Effect.provide(body, releasesLayer) as Effect.Effect<A, E, Exclude<R, Releases>>)

const external = (n: number) => ({ _tag: "External" as const, url: `https://cdn.example.com/app-${n}.zip` })

const failureCode = <A, E extends { readonly code: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    if (Exit.isSuccess(exit)) throw new Error("expected a failure")
    const reason = exit.cause.reasons.find((r) => r._tag === "Fail")
    return reason?._tag === "Fail" ? reason.error.code : "no failure"
  })

describe("semver rules", () => {
  it("accepts strict semver only", () => {
    for (const ok of ["1.0.0", "2.0.0-rc.1", "1.2.3+build.7", "0.0.1-alpha.beta.1"]) expect(ReleaseRules.strictVersion(ok)?.version).toBeDefined()
    for (const bad of ["v1.0.0", "1.0", "1.0.0.0", " 1.0.0", "=1.0.0", "01.0.0", "1.0.0-"]) expect(ReleaseRules.strictVersion(bad)).toBeUndefined()
  })

  it("sort keys order as semver precedence", () => {
    const versions = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0", "2.0.0"]
    const keys = versions.map((v) => ReleaseRules.versionSortKey(ReleaseRules.strictVersion(v)!))
    expect([...keys].sort()).toEqual(keys)
  })
})

describe("which product's releases a license sees", () => {
  const sees = (productId: number | null, requested: number | undefined) => {
    const product = ReleaseRules.licensedProduct({ productId }, requested)
    return Result.isSuccess(product) ? product.success : product.failure.code
  }

  it("its own product's only, the one a request names by default; a license without a product sees none", () => {
    expect(sees(7, undefined)).toBe(7)
    expect(sees(7, 7)).toBe(7)
    expect(sees(7, 8)).toBe("product_mismatch")
    expect(sees(null, undefined)).toBe("product_mismatch")
    expect(sees(null, 8)).toBe("product_mismatch")
  })
})

describe("publishing", () => {
  it.effect("publishes once per product and version, writes release.published, refuses loose versions", () =>
    onReleases(Effect.gen(function*() {
      const releases = yield* Releases
      const r = yield* releases.publish({ productId: 7, version: "1.0.0", channel: "beta", changelog: "First" }, external(1))
      expect(r).toMatchObject({ productId: 7, version: "1.0.0", channel: "beta", artifactUrl: "https://cdn.example.com/app-1.zip", artifactKey: null })
      const events = yield* Ports.EventOutbox.use((o) => o.readAfter(0, 100))
      expect(events.map((e) => [e.type, e.data])).toEqual([["release.published", { release_id: r.id, product_id: 7, version: "1.0.0", channel: "beta" }]])
      expect(yield* failureCode(releases.publish({ productId: 7, version: "1.0.0" }, external(2)))).toBe("release_exists")
      expect(yield* failureCode(releases.prepare({ productId: 7, version: "1.0.0" }))).toBe("release_exists")
      yield* releases.prepare({ productId: 8, version: "1.0.0" })
      expect(yield* failureCode(releases.publish({ productId: 7, version: "v1.0.1" }, external(3)))).toBe("rest_invalid_param")
      expect(yield* failureCode(releases.publish({ productId: 7, version: "1.0.1", minAppVersion: "1.x" }, external(3)))).toBe("rest_invalid_param")
      expect((yield* Ports.EventOutbox.use((o) => o.readAfter(0, 100))).length).toBe(1)
    })))
})

describe("update checks and downloads", () => {
  const setup = Effect.gen(function*() {
    const releases = yield* Releases
    const license = (yield* Licenses.use((l) => l.create({ productId: 7, maxActivations: 2 }))).license
    yield* Licensing.use((l) => l.activate({ licenseKey: license.key, facts: { fingerprint: "fp-1" }, ipAddress: null }))
    const publish = (version: string, channel: "stable" | "rc" | "beta" | "alpha" | "dev", minAppVersion: string | null = null) =>
      releases.publish({ productId: 7, version, channel, minAppVersion }, external(1))
    yield* publish("1.0.0", "stable")
    yield* publish("1.1.0", "stable")
    yield* publish("1.2.0-beta.1", "beta")
    yield* publish("1.2.0-rc.1", "rc")
    yield* publish("2.0.0", "stable", "1.1.0")
    yield* publish("9.0.0", "stable")
    yield* releases.publish({ productId: 8, version: "3.0.0" }, external(8))
    return { releases, license }
  })

  it.effect("offers the newest release the channel sees and the client may install", () =>
    onReleases(Effect.gen(function*() {
      const { license, releases } = yield* setup
      const check = (version: string, channel?: "stable" | "rc" | "beta" | "alpha" | "dev") =>
        releases.checkUpdate({ licenseKey: license.key, version, channel, fingerprint: "fp-1", ipAddress: null })
      // 9.0.0 has no minimum: everyone is offered it.
      expect((yield* check("1.0.0")).release?.version).toBe("9.0.0")
      expect((yield* check("9.0.0")).release).toBeUndefined()
      expect((yield* check("9.0.0")).token).toBeUndefined()
      const offered = yield* check("1.0.0")
      expect(offered.token).toMatch(/^[\w-]+\.[\w-]+$/)
      expect(offered.tokenExpiresAt).toBe(Math.floor(Date.UTC(2026, 0, 1) / 1000) * 1000 + 60_000)
      expect(yield* failureCode(releases.checkUpdate({ licenseKey: license.key, version: "1.0.0", productId: 8, ipAddress: null }))).toBe("product_mismatch")
      expect(yield* failureCode(releases.checkUpdate({ licenseKey: license.key, version: "1.0.0", fingerprint: "fp-unknown", ipAddress: null })))
        .toBe("fingerprint_not_activated")
      expect(yield* failureCode(check("latest"))).toBe("rest_invalid_param")
      yield* Licenses.use((l) => l.revoke(license.key))
      expect(yield* failureCode(check("1.0.0"))).toBe("license_revoked")
    })))

  it.effect("channels see the more stable ones; min_app_version sends an old client to the newest it may install", () =>
    onReleases(Effect.gen(function*() {
      const releases = yield* Releases
      const license = (yield* Licenses.use((l) => l.create({ productId: 7 }))).license
      const publish = (version: string, channel: "stable" | "rc" | "beta", minAppVersion: string | null = null) =>
        releases.publish({ productId: 7, version, channel, minAppVersion }, external(1))
      yield* publish("1.1.0", "stable")
      yield* publish("1.2.0-beta.1", "beta")
      yield* publish("1.2.0-rc.1", "rc")
      yield* publish("2.0.0", "stable", "1.1.0")
      const check = (version: string, channel?: "stable" | "rc" | "beta") =>
        Effect.map(releases.checkUpdate({ licenseKey: license.key, version, channel, ipAddress: null }), (c) => c.release?.version)
      expect(yield* check("1.0.0")).toBe("1.1.0")
      expect(yield* check("1.1.0")).toBe("2.0.0")
      expect(yield* check("1.1.0", "beta")).toBe("2.0.0")
      yield* releases.publish({ productId: 7, version: "3.0.0-beta.1", channel: "beta" }, external(1))
      expect(yield* check("2.0.0")).toBeUndefined()
      expect(yield* check("2.0.0", "rc")).toBeUndefined()
      expect(yield* check("2.0.0", "beta")).toBe("3.0.0-beta.1")
      expect(yield* check("1.0.0", "beta")).toBe("3.0.0-beta.1")
    })))

  it.effect("a download token is checked: tampered, expired, or its license revoked since; each download is logged", () =>
    onReleases(Effect.gen(function*() {
      const { license, releases } = yield* setup
      const check = yield* releases.checkUpdate({ licenseKey: license.key, version: "1.0.0", ipAddress: null })
      const token = check.token!
      expect((yield* releases.authorizeDownload(token, "10.0.0.1")).version).toBe("9.0.0")
      const [body, signature] = token.split(".")
      const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body!, "base64url").toString()), rid: 1 })).toString("base64url")
      expect(yield* failureCode(releases.authorizeDownload(`${forged}.${signature}`, null))).toBe("download_token_invalid")
      expect(yield* failureCode(releases.authorizeDownload("nonsense", null))).toBe("download_token_invalid")
      yield* ActivityRecorder.use((r) => r.flush)
      const downloads = yield* Ports.ActivityLog.use((log) => log.count({ licenseId: license.id }))
      yield* Licenses.use((l) => l.revoke(license.key))
      expect(yield* failureCode(releases.authorizeDownload(token, null))).toBe("license_revoked")
      yield* Licenses.use((l) => l.reinstate(license.key))
      yield* TestClock.adjust("61 seconds")
      expect(yield* failureCode(releases.authorizeDownload(token, null))).toBe("download_token_expired")
      yield* ActivityRecorder.use((r) => r.flush)
      // The refused download: its re-validation and the download itself (the expired token reached neither).
      expect(yield* Ports.ActivityLog.use((log) => log.count({ licenseId: license.id }))).toBe(downloads + 2)
    })))

  it.effect("a license without a product is offered nothing; a token stops working once its license moves to another product", () =>
    onReleases(Effect.gen(function*() {
      const { license, releases } = yield* setup
      const productless = (yield* Licenses.use((l) => l.create({}))).license
      for (const productId of [undefined, 7, 8]) {
        expect(yield* failureCode(releases.checkUpdate({ licenseKey: productless.key, version: "1.0.0", productId, ipAddress: null })))
          .toBe("product_mismatch")
      }
      const token = (yield* releases.checkUpdate({ licenseKey: license.key, version: "1.0.0", fingerprint: "fp-1", ipAddress: null })).token!
      yield* Licenses.use((l) => l.update(license.key, { productId: 8 }))
      expect(yield* failureCode(releases.authorizeDownload(token, null))).toBe("product_mismatch")
      yield* Licenses.use((l) => l.update(license.key, { productId: null }))
      expect(yield* failureCode(releases.authorizeDownload(token, null))).toBe("product_mismatch")
      yield* Licenses.use((l) => l.update(license.key, { productId: 7 }))
      expect((yield* releases.authorizeDownload(token, null)).version).toBe("9.0.0")
    })))
})
