/** The analytics feature in the engine: the service, and the anomaly rules run in the background. */
import { Layer } from "effect"
import { givenOf } from "../shared/feature.js"
import { Analytics, AnalyticsSettings, layerSubscriptionFigures } from "./Analytics.js"
import type { AnomalyThresholds } from "./rules.js"

/** Settings of the analytics feature. */
export interface AnalyticsOptions {
  /** Thresholds of the anomaly rules (CONTRACT §11); each one not given keeps its default. */
  readonly anomalyThresholds?: { readonly [K in keyof AnomalyThresholds]?: AnomalyThresholds[K] | undefined } | undefined
  /**
   * Seconds between background runs of the anomaly rules (default 60; also once at start): each newly detected
   * anomaly is announced with `anomaly.detected`, once across every process on the store. 0 turns it off (then
   * only GET /analytics/anomalies detects them).
   */
  readonly anomalyIntervalSeconds?: number | undefined
}

/** Seconds between background runs of the anomaly rules when none is given. */
export const defaultAnomalyIntervalSeconds = 60

/** `Analytics` on the store's subscriptions figures, and (unless `anomalyIntervalSeconds` is 0) the anomaly rules. */
export const feature = (options: AnalyticsOptions) => {
  const interval = options.anomalyIntervalSeconds ?? defaultAnomalyIntervalSeconds
  return {
    services: Analytics.layer.pipe(
      Layer.provide(layerSubscriptionFigures),
      Layer.provideMerge(
        options.anomalyThresholds === undefined
          ? Layer.empty
          : Layer.succeed(AnalyticsSettings, { ...AnalyticsSettings.defaultValue(), ...givenOf<AnomalyThresholds>(options.anomalyThresholds) })
      )
    ),
    background: interval > 0 ? Analytics.layerBackground(`${Math.round(interval * 1000)} millis`) : Layer.empty
  }
}
