/** The webhooks feature in the engine: the service, and delivery in the background when a sender is given. */
import { Layer } from "effect"
import { givenOf } from "../shared/feature.js"
import { WebhookSender, Webhooks, WebhookSettings, type WebhookSettingsShape } from "./Webhooks.js"

/** Settings of the webhooks feature. */
export interface WebhooksOptions {
  /** Webhooks: their HTTP client, reach, retries and how often the outbox is read (see {@link WebhookOptions}). */
  readonly webhooks?: WebhookOptions | undefined
}

type WebhookSettingsGiven = { readonly [K in keyof WebhookSettingsShape]?: WebhookSettingsShape[K] | undefined }

/** Settings of webhook delivery. */
export interface WebhookOptions extends WebhookSettingsGiven {
  /**
   * The HTTP client of deliveries (the bundled server's: undici, forbidden addresses refused at connect time).
   * Without it nothing is delivered in the background: events wait in the outbox for an engine that has one
   * (`Webhooks.ping` reports that no client is configured).
   */
  readonly sender?: (typeof WebhookSender)["Service"] | undefined
  /** Milliseconds between reads of the outbox and the delivery queue (default 500); 0 turns background delivery off. */
  readonly pollMillis?: number | undefined
}

/** How often delivery looks for new events and due deliveries when not told. */
export const defaultWebhookPollMillis = 500

/** `Webhooks` with the settings given over the defaults, and (with a sender) delivery in the background. */
export const feature = (options: WebhooksOptions) => {
  const { pollMillis, sender, ...settings } = options.webhooks ?? {}
  const poll = pollMillis ?? defaultWebhookPollMillis
  return {
    services: Webhooks.layer.pipe(
      Layer.provideMerge(Layer.mergeAll(
        Layer.succeed(WebhookSettings, { ...WebhookSettings.defaultValue(), ...givenOf<WebhookSettingsShape>(settings) }),
        sender === undefined ? Layer.empty : Layer.succeed(WebhookSender, sender)
      ))
    ),
    background: poll > 0 && sender !== undefined ? Webhooks.layerBackground(`${poll} millis`) : Layer.empty
  }
}
