/**
 * The `api-keys` routes of the lm/v1 API (CONTRACT §11): issue a key (the only time its secret is shown), list
 * keys, revoke one. Management routes: HTTP Basic API key of scope `read_write`, unknown body fields rejected.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ApiKeyScope, Authentication } from "../middleware/Authentication.js"
import { Idempotency } from "../middleware/Idempotency.js"
import { NoFields } from "./Licenses.js"
import { strictPayloadOptions } from "../ParseOptions.js"
import { NotFound } from "../wire/ApiErrors.js"
import { Success } from "../wire/Envelope.js"
import { ApiKeyWire, ListMeta, PageQuery, positiveIntFromString, ShortText } from "../wire/Wire.js"

/** POST /api-keys body. */
export const CreateApiKeyBody = Schema.Struct({
  description: Schema.optionalKey(
    ShortText.annotate({
      description: "What the key is for (default empty, at most 255 characters)."
    })
  ),
  scope: ApiKeyScope.annotate({ description: "`read` (GET), `write` (POST, PUT, PATCH, DELETE) or `read_write`." })
})

/** A new key with its credentials. */
export const IssuedApiKeyWire = Schema.Struct({
  id: Schema.Int,
  description: Schema.String,
  scope: ApiKeyScope,
  consumer_key: Schema.String.annotate({ description: "`ck_` + 40 lowercase hex characters: the HTTP Basic user." }),
  consumer_secret: Schema.String.annotate({
    description: "`cs_` + 40 lowercase hex characters: the HTTP Basic password. Shown only in this response."
  }),
  truncated_key: Schema.String,
  created_at: Schema.String
})

/** The API key routes. */
export class ApiKeysGroup extends HttpApiGroup.make("api-keys")
  .add(
    HttpApiEndpoint.post("create", "/api-keys", {
      payload: CreateApiKeyBody,
      success: Success(IssuedApiKeyWire).pipe(HttpApiSchema.status(201))
    }).annotateMerge(OpenApi.annotations({
      summary: "Issue an API key",
      description: "201 with the consumer key and secret; the secret is stored only as a SHA-256 hash and never " +
        "shown again. `scope` is required."
    })),
    HttpApiEndpoint.get("list", "/api-keys", {
      query: PageQuery,
      success: Success(Schema.Struct({ api_keys: Schema.Array(ApiKeyWire) }), ListMeta)
    }).annotateMerge(OpenApi.annotations({
      summary: "List API keys",
      description: "Oldest first, without secrets: `truncated_key` is `…` and the last 7 characters of the consumer " +
        "key. `last_access_at` is updated at most once a minute. Paging as for every list."
    })),
    HttpApiEndpoint.delete("delete", "/api-keys/:id", {
      params: { id: positiveIntFromString("The API key's id (a positive integer).") },
      payload: NoFields,
      success: Success(Schema.Struct({ deleted: Schema.Literal(true), id: Schema.Int })),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Revoke an API key",
      description: "The key stops working at once. A key may revoke itself, the last one included (then only " +
        "`lm api-keys create` or the bootstrap settings make a new one). Unknown id: 404 `api_key_not_found`."
    }))
  )
  .middleware(Idempotency)
  .middleware(Authentication)
  .annotate(HttpApi.PayloadParseOptions, strictPayloadOptions)
  .annotateMerge(OpenApi.annotations({
    title: "API keys",
    description: "API keys (a `read_write` API key required: `read` and `write` keys get 403 `rest_forbidden`, so no " +
      "key creates one with more rights than its own)."
  }))
{}
