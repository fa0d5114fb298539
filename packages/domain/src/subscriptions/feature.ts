/** The subscriptions feature in the engine: the state machine's service, and its period-end job in the background. */
import { Layer } from "effect"
import { Subscriptions, SubscriptionSettings } from "./Subscriptions.js"

/** Settings of the subscriptions feature. */
export interface SubscriptionsOptions {
  /** Days after an unpaid period end before a subscription goes on-hold (`LM_PAYMENT_GRACE_DAYS`, default 3). */
  readonly paymentGraceDays?: number | undefined
  /**
   * Seconds between runs of the subscriptions' period-end job (default 60; it also runs at once on start, so
   * moves missed while the server was down are made then); 0 turns it off.
   */
  readonly subscriptionJobIntervalSeconds?: number | undefined
}

/** Seconds between runs of the subscriptions' period-end job when none is given. */
export const defaultSubscriptionJobIntervalSeconds = 60

/** `Subscriptions`, and (unless `subscriptionJobIntervalSeconds` is 0) its period-end job. */
export const feature = (options: SubscriptionsOptions) => {
  const interval = options.subscriptionJobIntervalSeconds ?? defaultSubscriptionJobIntervalSeconds
  return {
    services: Subscriptions.layer.pipe(
      Layer.provideMerge(
        options.paymentGraceDays === undefined
          ? Layer.empty
          : Layer.succeed(SubscriptionSettings, { paymentGraceDays: options.paymentGraceDays })
      )
    ),
    background: interval > 0 ? Subscriptions.layerBackground(`${interval} seconds`) : Layer.empty
  }
}
