/** The subscriptions feature's errors (CONTRACT §10, §12). */
import { Schema } from "effect"

export class SubscriptionNotFound extends Schema.TaggedError<SubscriptionNotFound>()("SubscriptionNotFound", {
  message: Schema.String
}) {
  readonly code = "subscription_not_found"
  readonly status = 404
}
export const subscriptionNotFound = () => new SubscriptionNotFound({ message: "No subscription has that id." })

/** Another subscription already has this `external_id` at this billing provider (CONTRACT §20). */
export class SubscriptionExists extends Schema.TaggedError<SubscriptionExists>()("SubscriptionExists", {
  message: Schema.String
}) {
  readonly code = "subscription_exists"
  readonly status = 409
}
export const subscriptionExists = () =>
  new SubscriptionExists({ message: "Another subscription has that external_id at that billing provider." })
