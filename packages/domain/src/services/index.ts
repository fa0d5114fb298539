/** The domain's services, wired together. A store layer (memory or PostgreSQL) provides the ports. */
import { Layer } from "effect"
import { ActivityRecorder, type ActivityRecorderOptions } from "./ActivityRecorder.js"
import { ApiKeys } from "./ApiKeys.js"
import { Generators } from "./Generators.js"
import { Licenses } from "./Licenses.js"
import { Licensing } from "./Licensing.js"
import { Machines } from "./Machines.js"
import { Sweeper } from "./Sweeper.js"

/**
 * Every service of the licensing core. Needs the ports (from a store layer) and `Random`.
 */
export const servicesLayer = (options: { readonly activity?: ActivityRecorderOptions } = {}) =>
  Layer.mergeAll(Licenses.layer, Machines.layer, Generators.layer, ApiKeys.layer, Sweeper.layer).pipe(
    Layer.provideMerge(Licensing.layer),
    Layer.provideMerge(ActivityRecorder.layer(options.activity))
  )
