/** The access feature's records: API keys and their scopes. */
import { Schema } from "effect"
import { Id, Millis } from "../shared/model.js"

/** What an API key may do: `read` allows GET, `write` allows POST/PUT/PATCH/DELETE, `read_write` both. */
export const apiKeyScopes = ["read", "write", "read_write"] as const
export const ApiKeyScope = Schema.Literals(apiKeyScopes)
export type ApiKeyScope = typeof ApiKeyScope.Type

/** A stored API key: only SHA-256 hashes of the consumer key and secret are kept. */
export const ApiKey = Schema.Struct({
  id: Id,
  description: Schema.String,
  scope: ApiKeyScope,
  consumerKeyHash: Schema.String,
  consumerSecretHash: Schema.String,
  truncatedKey: Schema.String,
  createdAt: Millis,
  lastAccessAt: Schema.NullOr(Millis)
})
export type ApiKey = typeof ApiKey.Type
export type ApiKeyDraft = Omit<ApiKey, "id">
