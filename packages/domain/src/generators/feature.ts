/** The generators feature in the engine. */
import { Layer } from "effect"
import { servicesOnly } from "../shared/feature.js"
import { Generators } from "./Generators.js"

/** `Generators`, and the `GeneratorIssuer` through which licenses are created from a generator. */
export const feature = servicesOnly(Layer.merge(Generators.layer, Generators.layerIssuer))
