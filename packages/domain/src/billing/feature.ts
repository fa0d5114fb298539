/** The billing feature in the engine: provider events moving subscriptions (CONTRACT §20); no background job. */
import { servicesOnly } from "../shared/feature.js"
import { BillingEvents } from "./BillingEvents.js"

export const feature = servicesOnly(BillingEvents.layer)
