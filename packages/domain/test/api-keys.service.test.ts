/**
 * API keys (CONTRACT §2, §11, §14) through the service on the memory store: credentials, authentication,
 * scopes, hashes-only storage, the truncated key, who may manage keys and the `LM_BOOTSTRAP_*` key.
 */
import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { ApiKeys, Model, Ports, Services } from "@lm/domain"
import { onEngine } from "./engine.js"
import { T0 } from "./fixtures.js"

const sha256 = (value: string) => createHash("sha256").update(value).digest("hex")
const { operator } = Services.ApiKeyActor
const stored = Ports.ApiKeyRepository.use((repo) => repo.list({ page: 1, perPage: 100 }))

describe("ApiKeys", () => {
  it.effect("creates ck_/cs_ credentials that authenticate; a wrong secret or unknown key is unauthorized", () =>
    onEngine(Effect.gen(function*() {
      const apiKeys = yield* ApiKeys
      const issued = yield* apiKeys.create(operator, { description: "ci", scope: "read" })
      expect(issued.consumerKey).toMatch(/^ck_[0-9a-f]{40}$/)
      expect(issued.consumerSecret).toMatch(/^cs_[0-9a-f]{40}$/)
      const found = yield* apiKeys.authenticate(issued.consumerKey, issued.consumerSecret)
      expect(found).toMatchObject({ id: issued.apiKey.id, scope: "read", description: "ci" })

      const other = yield* apiKeys.create(operator, { description: "other", scope: "write" })
      const refusals = [
        [issued.consumerKey, other.consumerSecret],
        [other.consumerKey, issued.consumerSecret],
        [`ck_${"0".repeat(40)}`, issued.consumerSecret],
        [issued.consumerKey, ""],
        ["", ""],
        [issued.consumerKey.toUpperCase(), issued.consumerSecret]
      ] as const
      for (const [key, secret] of refusals) {
        expect(yield* Effect.flip(apiKeys.authenticate(key, secret))).toMatchObject({ _tag: "Unauthorized", code: "rest_unauthorized", status: 401 })
      }
    })))

  it.effect("stores only SHA-256 hashes of the key and secret, and a … + last-7 truncated key", () =>
    onEngine(Effect.gen(function*() {
      const issued = yield* (yield* ApiKeys).create(operator, { description: "x", scope: "read_write" })
      const [row] = (yield* stored).items
      expect(row).toMatchObject({
        consumerKeyHash: sha256(issued.consumerKey),
        consumerSecretHash: sha256(issued.consumerSecret),
        truncatedKey: `\u2026${issued.consumerKey.slice(-7)}`
      })
      expect(row!.truncatedKey).toHaveLength(8)
      const text = JSON.stringify(row)
      expect(text).not.toContain(issued.consumerKey.slice(3))
      expect(text).not.toContain(issued.consumerSecret.slice(3))
    })))

  it.effect("authorizes by scope: read → GET/HEAD/OPTIONS, write → POST/PUT/PATCH/DELETE, read_write → all", () =>
    onEngine(Effect.gen(function*() {
      const apiKeys = yield* ApiKeys
      const matrix: Record<Model.ApiKeyScope, Record<string, boolean>> = {
        read: { GET: true, HEAD: true, OPTIONS: true, POST: false, PUT: false, PATCH: false, DELETE: false },
        write: { GET: false, HEAD: false, OPTIONS: false, POST: true, PUT: true, PATCH: true, DELETE: true },
        read_write: { GET: true, HEAD: true, OPTIONS: true, POST: true, PUT: true, PATCH: true, DELETE: true }
      }
      for (const scope of Object.keys(matrix) as Array<Model.ApiKeyScope>) {
        const { apiKey } = yield* apiKeys.create(operator, { description: scope, scope })
        for (const [method, allowed] of Object.entries(matrix[scope])) {
          const exit = yield* Effect.exit(apiKeys.authorize(apiKey, method))
          expect([scope, method, exit._tag]).toEqual([scope, method, allowed ? "Success" : "Failure"])
          if (!allowed) expect(yield* Effect.flip(apiKeys.authorize(apiKey, method))).toMatchObject({ _tag: "Forbidden", code: "rest_forbidden", status: 403 })
        }
      }
    })))

  it("OPTIONS is a read: a read key may send it, a write key may not (as GET and HEAD)", () => {
    expect((["read", "write", "read_write"] as const).map((scope) => Services.scopeAllows(scope, "OPTIONS"))).toEqual([true, false, true])
    for (const scope of ["read", "write", "read_write"] as const) {
      expect([scope, Services.scopeAllows(scope, "OPTIONS")]).toEqual([scope, Services.scopeAllows(scope, "GET")])
    }
  })

  it("knows credentials by their shape: ck_/cs_ and 40 lowercase hex characters", () => {
    const key = `ck_${"0a".repeat(20)}`
    const secret = `cs_${"f9".repeat(20)}`
    expect(Services.isCredentialShape(key, secret)).toBe(true)
    for (const [k, s] of [
      [secret, key],
      [key.toUpperCase(), secret],
      [key, `cs_${"F9".repeat(20)}`],
      [`${key}0`, secret],
      [key, secret.slice(0, -1)],
      [` ${key}`, secret]
    ]) expect([k, s, Services.isCredentialShape(k!, s!)]).toEqual([k, s, false])
  })

  it.effect("records the last access, at most once a minute", () =>
    onEngine(Effect.gen(function*() {
      const apiKeys = yield* ApiKeys
      const issued = yield* apiKeys.create(operator, { description: "x", scope: "read" })
      expect((yield* stored).items[0]!.lastAccessAt).toBeNull()
      yield* apiKeys.authenticate(issued.consumerKey, issued.consumerSecret)
      expect((yield* stored).items[0]!.lastAccessAt).toBe(T0)
      yield* TestClock.adjust("30 seconds")
      yield* apiKeys.authenticate(issued.consumerKey, issued.consumerSecret)
      expect((yield* stored).items[0]!.lastAccessAt).toBe(T0)
      yield* TestClock.adjust("31 seconds")
      yield* apiKeys.authenticate(issued.consumerKey, issued.consumerSecret)
      expect((yield* stored).items[0]!.lastAccessAt).toBe(T0 + 61_000)
    })))

  it.effect("a deleted key no longer authenticates; bootstrap creates a read_write key only in an empty store", () =>
    onEngine(Effect.gen(function*() {
      const apiKeys = yield* ApiKeys
      const boot = yield* apiKeys.bootstrapIfEmpty
      expect(boot?.apiKey.scope).toBe("read_write")
      expect(yield* apiKeys.bootstrapIfEmpty).toBeUndefined()
      yield* apiKeys.delete(operator, boot!.apiKey.id)
      expect(yield* Effect.flip(apiKeys.authenticate(boot!.consumerKey, boot!.consumerSecret))).toMatchObject({ _tag: "Unauthorized" })
      expect(yield* Effect.flip(apiKeys.delete(operator, boot!.apiKey.id))).toMatchObject({ _tag: "ApiKeyNotFound", status: 404 })
    })))

  it.effect("ensure keeps exactly the given credentials and scope", () =>
    onEngine(Effect.gen(function*() {
      const apiKeys = yield* ApiKeys
      const consumerKey = `ck_${"a".repeat(40)}`
      const consumerSecret = `cs_${"b".repeat(40)}`
      yield* apiKeys.ensure({ consumerKey, consumerSecret, scope: "read", description: "boot" })
      yield* apiKeys.ensure({ consumerKey, consumerSecret, scope: "read_write", description: "boot" })
      expect((yield* stored).items.map((k) => k.scope)).toEqual(["read_write"])
      expect((yield* apiKeys.authenticate(consumerKey, consumerSecret)).scope).toBe("read_write")
      expect(yield* Effect.flip(apiKeys.ensure({ consumerKey: "nope", consumerSecret, scope: "read", description: "x" }))).toMatchObject({ _tag: "Unauthorized" })
    })))

  it("lets only read_write keys manage keys, and no key grant more rights than its own", () => {
    const scopes = ["read", "write", "read_write"] as const
    expect(scopes.map(Services.mayManageApiKeys)).toEqual([false, false, true])
    const grants = scopes.map((granter) => [granter, scopes.filter((scope) => Services.mayGrant(granter, scope))])
    expect(grants).toEqual([["read", []], ["write", []], ["read_write", ["read", "write", "read_write"]]])
  })

  it("creates a missing bootstrap key whatever other keys exist, unless an administrator deleted it", () => {
    const cases = [
      ["same", false, "keep"],
      ["same", true, "keep"],
      ["changed", false, "replace"],
      ["changed", true, "replace"],
      ["missing", false, "create"],
      ["missing", true, "withhold"]
    ] as const
    for (const [stored, deleted, action] of cases) {
      expect([stored, deleted, Services.bootstrapAction(stored, deleted)]).toEqual([stored, deleted, action])
    }
  })

  it.effect("refuses read and write keys every key management with 403 rest_forbidden, changing nothing", () =>
    onEngine(Effect.gen(function*() {
      const apiKeys = yield* ApiKeys
      const boot = yield* apiKeys.create(operator, { description: "bootstrap", scope: "read_write" })
      for (const scope of ["read", "write"] as const) {
        const actor = Services.ApiKeyActor.key(scope)
        const refusals = [
          apiKeys.create(actor, { description: "escalate", scope: "read_write" }),
          apiKeys.create(actor, { description: "same", scope }),
          apiKeys.list(actor, { page: 1, perPage: 10 }),
          apiKeys.delete(actor, boot.apiKey.id)
        ]
        for (const refusal of refusals) {
          const error = yield* Effect.flip(refusal)
          expect(error).toMatchObject({ _tag: "Forbidden", code: "rest_forbidden", status: 403 })
          expect(error.message).toContain("read_write")
        }
      }
      expect((yield* stored).items.map((k) => k.id)).toEqual([boot.apiKey.id])
      expect((yield* apiKeys.authenticate(boot.consumerKey, boot.consumerSecret)).id).toBe(boot.apiKey.id)
    })))

  it.effect("lets a read_write key and the operator create every scope, list and delete", () =>
    onEngine(Effect.gen(function*() {
      const apiKeys = yield* ApiKeys
      for (const actor of [Services.ApiKeyActor.key("read_write"), operator]) {
        const made = []
        for (const scope of ["read", "write", "read_write"] as const) {
          made.push((yield* apiKeys.create(actor, { description: scope, scope })).apiKey)
        }
        expect(made.map((k) => k.scope)).toEqual(["read", "write", "read_write"])
        expect((yield* apiKeys.list(actor, { page: 1, perPage: 10 })).items.map((k) => k.id)).toEqual(made.map((k) => k.id))
        for (const key of made) yield* apiKeys.delete(actor, key.id)
        expect((yield* apiKeys.list(actor, { page: 1, perPage: 10 })).total).toBe(0)
      }
    })))

  it.effect("ensures a bootstrap key beside other keys, and never restores one an administrator deleted", () =>
    onEngine(Effect.gen(function*() {
      const apiKeys = yield* ApiKeys
      const admin = yield* apiKeys.create(operator, { description: "admin", scope: "read_write" })
      const boot = { consumerKey: `ck_${"c".repeat(40)}`, consumerSecret: `cs_${"d".repeat(40)}`, scope: "read_write", description: "bootstrap" } as const
      const other = { ...boot, consumerKey: `ck_${"e".repeat(40)}` }
      expect((yield* apiKeys.ensure(boot)).action).toBe("create")
      expect((yield* apiKeys.ensure(other)).action).toBe("create")
      const created = (yield* stored).items.find((k) => k.truncatedKey === Services.truncateConsumerKey(boot.consumerKey))
      expect(yield* apiKeys.ensure(boot)).toMatchObject({ action: "keep", apiKey: { id: created!.id } })

      yield* apiKeys.delete(Services.ApiKeyActor.key("read_write"), created!.id)
      expect(yield* apiKeys.ensure(boot)).toEqual({ action: "withhold" })
      expect(yield* Effect.flip(apiKeys.authenticate(boot.consumerKey, boot.consumerSecret))).toMatchObject({ _tag: "Unauthorized" })
      // Withheld even when no other key is left: a deleted credential never comes back.
      for (const key of (yield* stored).items) yield* apiKeys.delete(operator, key.id)
      expect(yield* apiKeys.ensure(boot)).toEqual({ action: "withhold" })
      expect(admin.apiKey.scope).toBe("read_write")
    })))
})
