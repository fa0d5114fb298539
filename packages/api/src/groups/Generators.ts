/**
 * The `generators` routes of the lm/v1 API (CONTRACT §8): CRUD on key generators and bulk generation of
 * `pending` keys into a generator's pool. Management routes: HTTP Basic API key, unknown body fields rejected.
 */
import { Schema } from "effect"
import { Model } from "@lm/domain/core"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../middleware/Authentication.js"
import { Idempotency } from "../middleware/Idempotency.js"
import { NoFields } from "./Licenses.js"
import { strictPayloadOptions } from "../ParseOptions.js"
import { Conflict, NotFound } from "../wire/ApiErrors.js"
import { Success } from "../wire/Envelope.js"
import {
  GeneratorWire,
  Id,
  IntBetween,
  LicenseSettingsInput,
  LicenseWire,
  ListMeta,
  MAX_ACTIVATIONS,
  MAX_DAYS,
  PageQuery,
  positiveIntFromString,
  ShortText
} from "../wire/Wire.js"

/** The most keys one generate call makes. */
export const MAX_GENERATE = 10_000

const idParam = { id: positiveIntFromString("The generator's id (a positive integer).") }

/** Fields of a generator that POST and PUT may set. */
const generatorFields = {
  name: ShortText.annotate({
    description: "A name for people (required, not blank, at most 255 characters)."
  }),
  charset: Schema.NullOr(Schema.String).annotate({
    description: "The key alphabet: upper-case letters and digits, at least 16 distinct (duplicates are dropped). " +
      "Default `ABCDEFGHJKLMNPQRSTUVWXYZ23456789`."
  }),
  chunk_length: Schema.NullOr(Schema.Int).annotate({
    description: "Characters per group, 2-16 (default 4). With the charset it must give at least 64 bits of randomness."
  }),
  prefix: Schema.NullOr(Schema.String).annotate({
    description: "0-8 of A-Z0-9, glued to the first group (default empty)."
  }),
  product_id: Schema.NullOr(Id),
  default_max_activations: Schema.NullOr(IntBetween(0, MAX_ACTIVATIONS)),
  default_valid_days: Schema.NullOr(IntBetween(1, MAX_DAYS)),
  default_overage_strategy: Schema.NullOr(Model.OverageStrategy),
  default_is_floating: Schema.NullOr(Schema.Boolean)
}

const optional = <F extends Record<string, Schema.Top>>(fields: F) =>
  Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Schema.optionalKey(v)])) as {
    readonly [K in keyof F]: Schema.optionalKey<F[K]>
  }

const { name, ...rest } = generatorFields

/** POST /generators body: `name` required, the rest optional. */
export const CreateGeneratorBody = Schema.Struct({ name, ...optional(rest) })

/** PUT /generators/{id} body: any field; `pool_size` is read-only. */
export const UpdateGeneratorBody = Schema.Struct(optional(generatorFields))

/** POST /generators/{id}/generate body: `count` and license settings that override the generator's defaults. */
export const GenerateBody = Schema.Struct({
  count: IntBetween(1, MAX_GENERATE).annotate({ description: `How many keys to make, 1-${MAX_GENERATE}.` }),
  ...LicenseSettingsInput
})

/** The generator routes. */
export class GeneratorsGroup extends HttpApiGroup.make("generators")
  .add(
    HttpApiEndpoint.get("list", "/generators", {
      query: PageQuery,
      success: Success(Schema.Struct({ generators: Schema.Array(GeneratorWire) }), ListMeta)
    }).annotateMerge(OpenApi.annotations({
      summary: "List generators",
      description: "Oldest first. Paging as for every list (`per_page` above 100 is read as 100)."
    })),
    HttpApiEndpoint.post("create", "/generators", {
      payload: CreateGeneratorBody,
      success: Success(GeneratorWire).pipe(HttpApiSchema.status(201))
    }).annotateMerge(OpenApi.annotations({
      summary: "Create a generator",
      description: "201 with the generator (`pool_size` 0). A charset and chunk length with less than 64 bits of " +
        "randomness (4 × chunk_length × log2(distinct characters)) is 400. A null field is the same as leaving it out."
    })),
    HttpApiEndpoint.get("get", "/generators/:id", {
      params: idParam,
      success: Success(GeneratorWire),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Get a generator with its pool size",
      description: "The generator's settings and `pool_size`, the number of its `pending` keys. Unknown id: 404 `generator_not_found`."
    })),
    HttpApiEndpoint.put("update", "/generators/:id", {
      params: idParam,
      payload: UpdateGeneratorBody,
      success: Success(GeneratorWire),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Update a generator",
      description: "Only the fields sent change; keys already made keep their format. A null clears: `product_id` " +
        "and the `default_*` fields become null, `charset`, `chunk_length` and `prefix` return to their defaults; " +
        "`name` cannot be null. `pool_size` is read-only (400)."
    })),
    HttpApiEndpoint.delete("delete", "/generators/:id", {
      params: idParam,
      payload: NoFields,
      success: Success(Schema.Struct({ deleted: Schema.Literal(true), id: Schema.Int, pool_keys_deleted: Schema.Int })),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Delete a generator and its pool",
      description: "Its `pending` keys are deleted (`pool_keys_deleted`); licenses already issued from it stay and keep " +
        "their `generator_id`."
    })),
    HttpApiEndpoint.post("generate", "/generators/:id/generate", {
      params: idParam,
      payload: GenerateBody,
      success: Success(Schema.Struct({ licenses: Schema.Array(LicenseWire) }), Schema.Struct({ total: Schema.Int }))
        .pipe(HttpApiSchema.status(201)),
      error: [NotFound, Conflict]
    }).annotateMerge(OpenApi.annotations({
      summary: "Generate keys into the pool",
      description: "Mints `count` unique keys as `pending` licenses (`source: generator`), all or nothing; 201 with " +
        "them and `meta.total`. The license fields override the generator's defaults; a null one sets that setting " +
        "to null (or its default) whatever the generator says. A pool key is issued by POST /licenses with `generator_id` (it becomes `source: pool`)."
    }))
  )
  .middleware(Idempotency)
  .middleware(Authentication)
  .annotate(HttpApi.PayloadParseOptions, strictPayloadOptions)
  .annotateMerge(OpenApi.annotations({ title: "Generators", description: "Key generators (API key required)." }))
{}
