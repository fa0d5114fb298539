/** The idempotency feature in the engine: idempotent management writes (CONTRACT §16). */
import { servicesOnly } from "../shared/feature.js"
import { Idempotency } from "./Idempotency.js"

export const feature = servicesOnly(Idempotency.layer)
