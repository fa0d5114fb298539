/** The policies feature in the engine. */
import { servicesOnly } from "../shared/feature.js"
import { Policies } from "./Policies.js"

/** `Policies`: the plans licenses are made from and the entitlements they unlock. */
export const feature = servicesOnly(Policies.layer)
