/** The releases feature in the engine. */
import { servicesOnly } from "../shared/feature.js"
import { Releases } from "./Releases.js"

/** Settings of the releases feature. */
export interface ReleasesFeatureOptions {
  /** Seconds a release download token stays valid (default 300). */
  readonly downloadTokenTtlSeconds?: number | undefined
}

/** `Releases`. */
export const feature = (options: ReleasesFeatureOptions) =>
  servicesOnly(Releases.layer({ downloadTokenTtlSeconds: options.downloadTokenTtlSeconds }))
