/** The subscriptions feature's errors (CONTRACT §10, §12). */
import { Schema } from "effect"

export class SubscriptionNotFound extends Schema.TaggedError<SubscriptionNotFound>()("SubscriptionNotFound", {
  message: Schema.String
}) {
  readonly code = "subscription_not_found"
  readonly status = 404
}
export const subscriptionNotFound = () => new SubscriptionNotFound({ message: "No subscription has that id." })
