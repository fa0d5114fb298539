/** The generators feature's rules: what a generator gives the licenses it makes. */
import type { LicenseSettings } from "../licensing/model.js"
import type { Generator } from "./model.js"

/** The settings a generator gives its licenses, under the body's fields. */
export const generatorDefaults = (generator: Generator): Partial<LicenseSettings> => ({
  ...(generator.productId !== null ? { productId: generator.productId } : {}),
  ...(generator.defaultMaxActivations !== null ? { maxActivations: generator.defaultMaxActivations } : {}),
  ...(generator.defaultValidDays !== null ? { validForDays: generator.defaultValidDays } : {}),
  ...(generator.defaultOverageStrategy !== null ? { overageStrategy: generator.defaultOverageStrategy } : {}),
  ...(generator.defaultIsFloating !== null ? { isFloating: generator.defaultIsFloating } : {})
})
