/** The event log in the engine: the recorder that writes it in batches, and its retention in the background. */
import { Layer } from "effect"
import { ActivityRecorder, type ActivityRecorderOptions } from "./ActivityRecorder.js"
import * as EventRetention from "./EventRetention.js"

/** Settings of the event log. */
export interface ActivityOptions {
  /** How the event log is buffered before it is written (see `ActivityRecorder`). */
  readonly activity?: ActivityRecorderOptions | undefined
  /**
   * Days the event log keeps an entry (default 90; fractions allowed); older entries are deleted in the
   * background, in small batches, every hour or every tenth of the window when that is shorter (see
   * `Services.EventRetention`). 0 keeps every entry.
   */
  readonly eventRetentionDays?: number | undefined
}

/** The event log's retention when none is given. */
export const defaultEventRetentionDays = 90

/** The `ActivityRecorder`, and (unless `eventRetentionDays` is 0) the event log's retention. */
export const feature = (options: ActivityOptions) => {
  const days = options.eventRetentionDays ?? defaultEventRetentionDays
  return {
    services: ActivityRecorder.layer(options.activity),
    background: days > 0 ? EventRetention.layerBackground({ days }) : Layer.empty
  }
}
