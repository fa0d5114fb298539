/**
 * The analytics feature's literal lists (periods, bucket widths, anomaly kinds), its anomaly records and the event
 * announcing an anomaly.
 */
import { Schema } from "effect"
import { Id, Millis } from "../shared/model.js"

/** The periods of GET /analytics/overview (CONTRACT §11). */
export const analyticsPeriods = ["7d", "30d", "90d"] as const
export const AnalyticsPeriod = Schema.Literals(analyticsPeriods)
export type AnalyticsPeriod = typeof AnalyticsPeriod.Type

/** The bucket widths of GET /analytics/validations. */
export const analyticsIntervals = ["hour", "day"] as const
export const AnalyticsInterval = Schema.Literals(analyticsIntervals)
export type AnalyticsInterval = typeof AnalyticsInterval.Type

/** The kinds of anomaly GET /analytics/anomalies reports (CONTRACT §11). */
export const anomalyTypes = ["fingerprint_churn", "ip_churn", "validation_spike", "failed_validation_burst"] as const
export const AnomalyType = Schema.Literals(anomalyTypes)
export type AnomalyType = typeof AnomalyType.Type

/** An anomaly announced so far, as the store keeps it: once per license and kind, with when it was detected. */
export const AnomalyRecord = Schema.Struct({ licenseId: Id, type: AnomalyType, detectedAt: Millis })
export type AnomalyRecord = typeof AnomalyRecord.Type

/** An anomaly as GET /analytics/anomalies reports it: on which license, of which kind, and what was seen. */
export const Anomaly = Schema.Struct({ licenseKey: Schema.String, type: AnomalyType, detail: Schema.String, detectedAt: Millis })
export type Anomaly = typeof Anomaly.Type

/** Names of the analytics events of CONTRACT §11. */
export const analyticsEventTypes = ["anomaly.detected"] as const
export type AnalyticsEventType = (typeof analyticsEventTypes)[number]
