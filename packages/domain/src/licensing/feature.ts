/**
 * The licensing feature in the engine: the client calls, license and machine management, signed tokens and the
 * CRL, the seat-change group commit, and the sweep in the background.
 */
import { Layer } from "effect"
import { Licenses } from "./Licenses.js"
import { Licensing } from "./Licensing.js"
import { Machines } from "./Machines.js"
import { RevocationList } from "./RevocationList.js"
import { SeatBatchSettings } from "./SeatBatches.js"
import { Sweeper } from "./Sweeper.js"
import { Tokens } from "./Tokens.js"

/** Settings of the licensing feature. */
export interface LicensingOptions {
  /** Seconds a signed validation stays usable offline (`exp`; default 7 days). */
  readonly offlineTtlSeconds?: number | undefined
  /** Seconds between background sweeps of expired leases and dead heartbeats (default 30); 0 turns it off. */
  readonly sweepIntervalSeconds?: number | undefined
  /**
   * Transactions of grouped seat changes that may run at once (default 2, see `SeatBatchSettings`); 0 runs every
   * activation, deactivation and heartbeat in its own transaction.
   */
  readonly seatBatchWorkers?: number | undefined
}

/** The sweep interval when none is given. */
export const defaultSweepIntervalSeconds = 30

/**
 * `Licensing`, `Licenses`, `Machines`, `Sweeper`, `Tokens` and the `RevocationList`, and (unless
 * `sweepIntervalSeconds` is 0) the sweep of expired leases and dead heartbeats.
 */
export const feature = (options: LicensingOptions) => {
  const interval = options.sweepIntervalSeconds ?? defaultSweepIntervalSeconds
  return {
    services: Layer.mergeAll(Licensing.layer, Licenses.layer, Machines.layer, Sweeper.layer, RevocationList.layer()).pipe(
      Layer.provideMerge(Tokens.layer({ offlineTtlSeconds: options.offlineTtlSeconds })),
      Layer.provideMerge(
        options.seatBatchWorkers === undefined
          ? Layer.empty
          : Layer.succeed(SeatBatchSettings, { ...SeatBatchSettings.defaultValue(), workers: Math.max(0, options.seatBatchWorkers) })
      )
    ),
    background: interval > 0 ? Sweeper.layerBackground(`${interval} seconds`) : Layer.empty
  }
}
