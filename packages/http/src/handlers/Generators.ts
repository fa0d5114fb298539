/**
 * Handlers of the `generators` group: each calls one method of the domain's `Generators` service and writes
 * the result with `Wire.ts`. Domain errors map to the envelope mechanically.
 */
import { Effect } from "effect"
import { Generators, Keys, Services } from "@lm/domain"
import { Api, ok } from "@lm/api"
import type { UpdateGeneratorBody } from "@lm/api"
import { generatorToWire, licenseSettingsFromWire, licenseToWire, listMeta, pageRequest } from "@lm/api/wire"
import { group } from "./Group.js"

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
export const GeneratorsHandlers = group(Api, "generators", (handlers) =>
  Effect.gen(function*() {
    const generators = yield* Generators
    return handlers.handleAll({
      list: ({ query }) => {
        const page = pageRequest(query)
        return generators.list(page).pipe(
          Effect.map((result) =>
            ok({ generators: result.items.map(generatorToWire) }, listMeta(result.total, page.page, page.perPage))
          )
        )
      },
      create: ({ payload }) =>
        generators.create(generatorInput(payload)).pipe(
          Effect.map((view) => ok(generatorToWire(view)))
        ),
      get: ({ params }) =>
        generators.get(params.id).pipe(Effect.map((view) => ok(generatorToWire(view)))),
      update: ({ params, payload }) =>
        generators.update(params.id, generatorInput(payload)).pipe(
          Effect.map((view) => ok(generatorToWire(view)))
        ),
      delete: ({ params }) =>
        generators.delete(params.id).pipe(
          Effect.map((result) => ok({ deleted: true as const, id: result.id, pool_keys_deleted: result.poolKeysDeleted }))
        ),
      generate: ({ params, payload }) => {
        const { count, ...settings } = payload
        return generators.generate(params.id, count, licenseSettingsFromWire(settings)).pipe(
          Effect.map((views) => ok({ licenses: views.map(licenseToWire) }, { total: views.length }))
        )
      }
    })
  }))
