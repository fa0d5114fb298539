/**
 * API keys (CONTRACT §2, §11): `ck_`/`cs_` credentials of 40 hex characters, stored only as SHA-256 hex,
 * authenticated in constant time, with scopes `read` (GET, HEAD, OPTIONS), `write` (POST, PUT, PATCH, DELETE) and
 * `read_write`. The HTTP middleware authenticates and authorises through {@link isCredentialShape} and
 * {@link scopeAllows}: these rules exist here only.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { Clock, Context, Effect, Layer } from "effect"
import { ApiKeyNotFound, Forbidden, type StorageUnavailable, Unauthorized } from "../errors.js"
import type { ApiKey, ApiKeyScope } from "../model.js"
import { ApiKeyRepository, type Page, type PageRequest } from "../ports.js"
import { Random } from "../random.js"

/** `ck_` + 40 lowercase hex characters. */
export const consumerKeyPattern = /^ck_[0-9a-f]{40}$/
/** `cs_` + 40 lowercase hex characters. */
export const consumerSecretPattern = /^cs_[0-9a-f]{40}$/

/** SHA-256 hex of a credential. */
export const sha256Hex = (value: string): string => createHash("sha256").update(value, "utf8").digest("hex")

/** `…` followed by the last 7 characters of the consumer key. */
export const truncateConsumerKey = (consumerKey: string): string => `\u2026${consumerKey.slice(-7)}`

/** Methods that only read: GET, HEAD and OPTIONS. */
const READ_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"])

/** Whether a scope allows an HTTP method: `read` allows the reading methods, `write` every other, `read_write` all. */
export const scopeAllows = (scope: ApiKeyScope, method: string): boolean =>
  scope === "read_write" || (READ_METHODS.has(method) ? scope === "read" : scope === "write")

/** Whether a pair of strings has the shape of API credentials. */
export const isCredentialShape = (consumerKey: string, consumerSecret: string): boolean =>
  consumerKeyPattern.test(consumerKey) && consumerSecretPattern.test(consumerSecret)

/** A new key with its credentials: the only moment the secret is known. */
export interface IssuedApiKey {
  readonly apiKey: ApiKey
  readonly consumerKey: string
  readonly consumerSecret: string
}

/** Only write `last_access_at` when it is older than this, so authentication stays a read. */
const TOUCH_EVERY_MS = 60_000

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex")

export class ApiKeys extends Context.Service<ApiKeys, {
  readonly create: (input: { readonly description: string; readonly scope: ApiKeyScope }) => Effect.Effect<IssuedApiKey, StorageUnavailable>
  /**
   * Ensures a key with exactly these credentials and scope exists (the bootstrap key of `LM_BOOTSTRAP_*`).
   * Fails with `Unauthorized` when the credentials are not of the `ck_`/`cs_` shape.
   */
  readonly ensure: (input: {
    readonly consumerKey: string
    readonly consumerSecret: string
    readonly scope: ApiKeyScope
    readonly description: string
  }) => Effect.Effect<ApiKey, Unauthorized | StorageUnavailable>
  /** Creates a `read_write` key when the store has none; returns it, or undefined when keys exist. */
  readonly bootstrapIfEmpty: Effect.Effect<IssuedApiKey | undefined, StorageUnavailable>
  readonly list: (page: PageRequest) => Effect.Effect<Page<ApiKey>, StorageUnavailable>
  readonly delete: (id: number) => Effect.Effect<void, ApiKeyNotFound | StorageUnavailable>
  /** The key these credentials belong to; `Unauthorized` for anything else. The secret is compared in constant time. */
  readonly authenticate: (consumerKey: string, consumerSecret: string) => Effect.Effect<ApiKey, Unauthorized | StorageUnavailable>
  /** `Forbidden` unless the key's scope allows the method. */
  readonly authorize: (apiKey: ApiKey, method: string) => Effect.Effect<void, Forbidden>
}>()("@lm/domain/ApiKeys") {
  static readonly layer = Layer.effect(
    ApiKeys,
    Effect.gen(function*() {
      const repo = yield* ApiKeyRepository
      const random = yield* Random

      const unauthorized = () => new Unauthorized({ message: "Valid API credentials are required (HTTP Basic: consumer key and secret)." })

      const store = Effect.fnUntraced(function*(consumerKey: string, consumerSecret: string, scope: ApiKeyScope, description: string) {
        const now = yield* Clock.currentTimeMillis
        return yield* repo.insert({
          description,
          scope,
          consumerKeyHash: sha256Hex(consumerKey),
          consumerSecretHash: sha256Hex(consumerSecret),
          truncatedKey: truncateConsumerKey(consumerKey),
          createdAt: now,
          lastAccessAt: null
        })
      })

      const create = Effect.fn("ApiKeys.create")(function*(input: { readonly description: string; readonly scope: ApiKeyScope }) {
        const consumerKey = `ck_${hex(yield* random.bytes(20))}`
        const consumerSecret = `cs_${hex(yield* random.bytes(20))}`
        const apiKey = yield* store(consumerKey, consumerSecret, input.scope, input.description)
        return { apiKey, consumerKey, consumerSecret }
      })

      const ensure = Effect.fn("ApiKeys.ensure")(function*(input: {
        readonly consumerKey: string
        readonly consumerSecret: string
        readonly scope: ApiKeyScope
        readonly description: string
      }) {
        if (!isCredentialShape(input.consumerKey, input.consumerSecret)) return yield* unauthorized()
        const existing = yield* repo.findByConsumerKeyHash(sha256Hex(input.consumerKey))
        if (existing !== undefined) {
          if (existing.consumerSecretHash === sha256Hex(input.consumerSecret) && existing.scope === input.scope) return existing
          yield* repo.delete(existing.id)
        }
        return yield* store(input.consumerKey, input.consumerSecret, input.scope, input.description)
      })

      const bootstrapIfEmpty = Effect.gen(function*() {
        if ((yield* repo.count) > 0) return undefined
        return yield* create({ description: "bootstrap", scope: "read_write" })
      })

      const remove = Effect.fn("ApiKeys.delete")(function*(id: number) {
        if (!(yield* repo.delete(id))) return yield* new ApiKeyNotFound({ message: "No API key has that id." })
      })

      const authenticate = Effect.fnUntraced(function*(consumerKey: string, consumerSecret: string) {
        if (!isCredentialShape(consumerKey, consumerSecret)) return yield* unauthorized()
        const apiKey = yield* repo.findByConsumerKeyHash(sha256Hex(consumerKey))
        // Hash and compare even when the key is unknown, so timing does not tell which half was wrong.
        const expected = Buffer.from(apiKey?.consumerSecretHash ?? sha256Hex(consumerKey), "hex")
        const given = Buffer.from(sha256Hex(consumerSecret), "hex")
        if (!timingSafeEqual(expected, given) || apiKey === undefined) return yield* unauthorized()
        const now = yield* Clock.currentTimeMillis
        if (apiKey.lastAccessAt === null || now - apiKey.lastAccessAt > TOUCH_EVERY_MS) yield* repo.touch(apiKey.id, now)
        return apiKey
      })

      const authorize = (apiKey: ApiKey, method: string) =>
        scopeAllows(apiKey.scope, method)
          ? Effect.void
          : Effect.fail(new Forbidden({ message: `This API key's scope (${apiKey.scope}) does not allow ${method} requests.` }))

      return ApiKeys.of({ create, ensure, bootstrapIfEmpty, list: repo.list, delete: remove, authenticate, authorize })
    })
  )
}
