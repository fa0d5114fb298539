/**
 * API keys (CONTRACT §2, §11): `ck_`/`cs_` credentials of 40 hex characters, stored only as SHA-256 hex,
 * authenticated in constant time, with scopes `read` (GET, HEAD, OPTIONS), `write` (POST, PUT, PATCH, DELETE) and
 * `read_write`. The HTTP middleware authenticates and authorises through {@link isCredentialShape} and
 * {@link scopeAllows}; managing keys is held to {@link mayManageApiKeys} and {@link mayGrant}, and the
 * `LM_BOOTSTRAP_*` key to {@link bootstrapAction}: these rules exist here only.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { Clock, Context, Effect, Layer } from "effect"
import type { StorageUnavailable } from "../shared/errors.js"
import type { Page, PageRequest } from "../shared/ports.js"
import { Random } from "../shared/random.js"
import { ApiKeyNotFound, Forbidden, Unauthorized } from "./errors.js"
import type { ApiKey, ApiKeyScope } from "./model.js"
import { ApiKeyRepository } from "./ports.js"

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

/**
 * Who manages API keys: an authenticated key, held to its scope, or the operator at the command line
 * (`lm api-keys …`), who has every right.
 */
export type ApiKeyActor =
  | { readonly _tag: "ApiKey"; readonly scope: ApiKeyScope }
  | { readonly _tag: "Operator" }

export const ApiKeyActor = {
  /** The operator: whoever runs `lm` on the server's store. */
  operator: { _tag: "Operator" } as ApiKeyActor,
  /** A request authenticated with a key of this scope. */
  key: (scope: ApiKeyScope): ApiKeyActor => ({ _tag: "ApiKey", scope })
} as const

/** The rights an actor acts with: the operator's are `read_write`. */
const actorScope = (actor: ApiKeyActor): ApiKeyScope => actor._tag === "Operator" ? "read_write" : actor.scope

/** Whether a key of this scope may create, list and delete API keys: only `read_write` may. */
export const mayManageApiKeys = (scope: ApiKeyScope): boolean => scope === "read_write"

/**
 * Whether a key of scope `granter` may create a key of `scope`: it may manage keys and the new key has no right
 * the granter lacks (`read_write` grants any scope; other scopes grant none).
 */
export const mayGrant = (granter: ApiKeyScope, scope: ApiKeyScope): boolean =>
  mayManageApiKeys(granter) && (granter === "read_write" || granter === scope)

/** What start-up does with the `LM_BOOTSTRAP_*` credentials (see {@link bootstrapAction}). */
export type BootstrapAction = "keep" | "replace" | "create" | "withhold"

/**
 * The bootstrap rule (CONTRACT §2). A key with exactly these credentials and scope is kept; a key with the same
 * consumer key but another secret or scope is replaced (the operator changed the setting). A missing key is
 * created whatever other keys exist (a new bootstrap key on an existing store, several servers with different
 * ones on one store), unless an administrator deleted that consumer key: then it is withheld at every later
 * start, so a leaked bootstrap credential stays revoked.
 */
export const bootstrapAction = (stored: "same" | "changed" | "missing", deletedByAdministrator: boolean): BootstrapAction =>
  stored === "same" ? "keep" : stored === "changed" ? "replace" : deletedByAdministrator ? "withhold" : "create"

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

/** The outcome of {@link ApiKeys.ensure}: the bootstrap key, or `withhold` when it stays deleted. */
export type EnsuredKey =
  | { readonly action: "keep" | "replace" | "create"; readonly apiKey: ApiKey }
  | { readonly action: "withhold" }

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex")

export class ApiKeys extends Context.Service<ApiKeys, {
  /** A new key; `Forbidden` unless the actor may grant its scope ({@link mayGrant}). */
  readonly create: (
    actor: ApiKeyActor,
    input: { readonly description: string; readonly scope: ApiKeyScope }
  ) => Effect.Effect<IssuedApiKey, Forbidden | StorageUnavailable>
  /**
   * Applies {@link bootstrapAction} to the bootstrap key of `LM_BOOTSTRAP_*`: keeps, replaces or creates a key
   * with exactly these credentials and scope, or withholds it (an administrator deleted it).
   * Fails with `Unauthorized` when the credentials are not of the `ck_`/`cs_` shape.
   */
  readonly ensure: (input: {
    readonly consumerKey: string
    readonly consumerSecret: string
    readonly scope: ApiKeyScope
    readonly description: string
  }) => Effect.Effect<EnsuredKey, Unauthorized | StorageUnavailable>
  /** Creates a `read_write` key when the store has none; returns it, or undefined when keys exist. */
  readonly bootstrapIfEmpty: Effect.Effect<IssuedApiKey | undefined, StorageUnavailable>
  /** The keys, oldest first; `Forbidden` unless the actor may manage keys. */
  readonly list: (actor: ApiKeyActor, page: PageRequest) => Effect.Effect<Page<ApiKey>, Forbidden | StorageUnavailable>
  /** Revokes a key; `Forbidden` unless the actor may manage keys. */
  readonly delete: (actor: ApiKeyActor, id: number) => Effect.Effect<void, Forbidden | ApiKeyNotFound | StorageUnavailable>
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

      /** `Forbidden` unless the actor may manage API keys. */
      const mayManage = (actor: ApiKeyActor) => {
        const scope = actorScope(actor)
        return mayManageApiKeys(scope)
          ? Effect.void
          : Effect.fail(new Forbidden({ message: `Managing API keys needs a read_write key; this key's scope is ${scope}.` }))
      }

      const issue = Effect.fnUntraced(function*(input: { readonly description: string; readonly scope: ApiKeyScope }) {
        const consumerKey = `ck_${hex(yield* random.bytes(20))}`
        const consumerSecret = `cs_${hex(yield* random.bytes(20))}`
        const apiKey = yield* store(consumerKey, consumerSecret, input.scope, input.description)
        return { apiKey, consumerKey, consumerSecret }
      })

      const create = Effect.fn("ApiKeys.create")(function*(actor: ApiKeyActor, input: { readonly description: string; readonly scope: ApiKeyScope }) {
        yield* mayManage(actor)
        const granter = actorScope(actor)
        if (!mayGrant(granter, input.scope)) {
          return yield* new Forbidden({ message: `A ${granter} key cannot create a ${input.scope} key: that is more rights than its own.` })
        }
        return yield* issue(input)
      })

      const ensure = Effect.fn("ApiKeys.ensure")(function*(input: {
        readonly consumerKey: string
        readonly consumerSecret: string
        readonly scope: ApiKeyScope
        readonly description: string
      }) {
        if (!isCredentialShape(input.consumerKey, input.consumerSecret)) return yield* unauthorized()
        const existing = yield* repo.findByConsumerKeyHash(sha256Hex(input.consumerKey))
        const stored = existing === undefined
          ? "missing"
          : existing.consumerSecretHash === sha256Hex(input.consumerSecret) && existing.scope === input.scope
          ? "same"
          : "changed"
        const action = bootstrapAction(stored, stored === "missing" && (yield* repo.wasDeleted(sha256Hex(input.consumerKey))))
        if (action === "keep") return { action, apiKey: existing! }
        if (action === "withhold") return { action }
        if (action === "replace") yield* repo.delete(existing!.id)
        return { action, apiKey: yield* store(input.consumerKey, input.consumerSecret, input.scope, input.description) }
      })

      const bootstrapIfEmpty = Effect.gen(function*() {
        if ((yield* repo.count) > 0) return undefined
        return yield* issue({ description: "bootstrap", scope: "read_write" })
      })

      const list = (actor: ApiKeyActor, page: PageRequest) => Effect.andThen(mayManage(actor), repo.list(page))

      const remove = Effect.fn("ApiKeys.delete")(function*(actor: ApiKeyActor, id: number) {
        yield* mayManage(actor)
        // Remembered, so the bootstrap rule never restores a deleted (perhaps leaked) credential.
        if (!(yield* repo.deleteRemembered(id, yield* Clock.currentTimeMillis))) return yield* new ApiKeyNotFound({ message: "No API key has that id." })
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

      return ApiKeys.of({ create, ensure, bootstrapIfEmpty, list, delete: remove, authenticate, authorize })
    })
  )
}
