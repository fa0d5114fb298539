/** The webhooks feature's errors (CONTRACT §11, §12). */
import { Schema } from "effect"

export class WebhookNotFound extends Schema.TaggedError<WebhookNotFound>()("WebhookNotFound", {
  message: Schema.String
}) {
  readonly code = "webhook_not_found"
  readonly status = 404
}
export const webhookNotFound = () => new WebhookNotFound({ message: "No webhook has that id." })
/** A delivery that is not one of that webhook's (the contract has no code of its own for it). */
export const deliveryNotFound = () => new WebhookNotFound({ message: "That webhook has no delivery with that id." })
