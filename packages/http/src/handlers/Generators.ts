/**
 * Handlers of the `generators` group: each calls one method of the domain's `Generators` service and writes
 * the result with `Wire.ts`. Domain errors map to the envelope mechanically.
 */
import { Effect } from "effect"
import { Generators, Keys, Services } from "@lm/domain"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "@lm/api"
import type { UpdateGeneratorBody } from "@lm/api"
import { ApiErrors } from "@lm/api"
import { ok } from "@lm/api"
import { generatorToWire, licenseSettingsFromWire, licenseToWire, listMeta, pageRequest } from "@lm/api/wire"

type GeneratorBody = typeof UpdateGeneratorBody.Type

/**
 * A generator body in the domain's terms. `null` on a format field (`charset`, `chunk_length`, `prefix`) is its
 * default; `null` elsewhere clears; a missing field stays undefined (unchanged on PUT, default on POST).
 */
const generatorInput = (body: GeneratorBody): Services.GeneratorInput => ({
  name: body.name,
  charset: body.charset === null ? Keys.defaultKeyFormat.charset : body.charset,
  chunkLength: body.chunk_length === null ? Keys.defaultKeyFormat.chunkLength : body.chunk_length,
  prefix: body.prefix === null ? Keys.defaultKeyFormat.prefix : body.prefix,
  productId: body.product_id,
  defaultMaxActivations: body.default_max_activations,
  defaultValidDays: body.default_valid_days,
  defaultOverageStrategy: body.default_overage_strategy,
  defaultIsFloating: body.default_is_floating
})

/** The `generators` handlers, on the domain's `Generators` service. */
export const GeneratorsHandlers = HttpApiBuilder.group(Api, "generators", (handlers) =>
  Effect.gen(function*() {
    const generators = yield* Generators
    return handlers.handleAll({
      list: ({ query }) => {
        const page = pageRequest(query)
        return generators.list(page).pipe(
          Effect.map((result) =>
            ok({ generators: result.items.map(generatorToWire) }, listMeta(result.total, page.page, page.perPage))
          ),
          Effect.mapError(ApiErrors.fromDomain)
        )
      },
      create: ({ payload }) =>
        generators.create(generatorInput(payload)).pipe(
          Effect.map((view) => ok(generatorToWire(view))),
          Effect.mapError(ApiErrors.fromDomain)
        ),
      get: ({ params }) =>
        generators.get(params.id).pipe(Effect.map((view) => ok(generatorToWire(view))), Effect.mapError(ApiErrors.fromDomain)),
      update: ({ params, payload }) =>
        generators.update(params.id, generatorInput(payload)).pipe(
          Effect.map((view) => ok(generatorToWire(view))),
          Effect.mapError(ApiErrors.fromDomain)
        ),
      delete: ({ params }) =>
        generators.delete(params.id).pipe(
          Effect.map((result) => ok({ deleted: true as const, id: result.id, pool_keys_deleted: result.poolKeysDeleted })),
          Effect.mapError(ApiErrors.fromDomain)
        ),
      generate: ({ params, payload }) => {
        const { count, ...settings } = payload
        return generators.generate(params.id, count, licenseSettingsFromWire(settings)).pipe(
          Effect.map((views) => ok({ licenses: views.map(licenseToWire) }, { total: views.length })),
          Effect.mapError(ApiErrors.fromDomain)
        )
      }
    })
  }))
