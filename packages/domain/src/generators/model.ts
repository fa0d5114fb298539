/** The generators feature's records: key generators (a key format and defaults for the licenses they make). */
import { Schema } from "effect"
import { OverageStrategy } from "../licensing/model.js"
import { Id, Millis } from "../shared/model.js"

/** A key generator: the format of the keys it mints and the settings its licenses get unless told otherwise. */
export const Generator = Schema.Struct({
  id: Id,
  name: Schema.String,
  charset: Schema.String,
  chunkLength: Schema.Int,
  prefix: Schema.String,
  productId: Schema.NullOr(Id),
  defaultMaxActivations: Schema.NullOr(Schema.Int),
  defaultValidDays: Schema.NullOr(Schema.Int),
  defaultOverageStrategy: Schema.NullOr(OverageStrategy),
  defaultIsFloating: Schema.NullOr(Schema.Boolean),
  createdAt: Millis,
  updatedAt: Millis
})
export type Generator = typeof Generator.Type
export type GeneratorDraft = Omit<Generator, "id">

/** Names of the generators' events of CONTRACT §11. */
export const generatorEventTypes = ["generator.keys_generated"] as const
export type GeneratorEventType = (typeof generatorEventTypes)[number]
