/**
 * The finishing of the OpenAPI document `OpenApi.fromApi` derives from the API definition (applied as the API's
 * `transform` annotation), for what the derivation cannot say on its own:
 * - integers: the safe-integer range the derivation writes for every unbounded integer
 *   (`-9007199254740991`..`9007199254740991`) is no bound of the contract and is left out; a field with contract
 *   bounds keeps them (`minimum`/`maximum` from its checks);
 * - path ids: a path parameter named `id` or `…_id` is sent as decimal digits and documented as the positive
 *   integer it is (the schema decodes it from the path's text);
 * - webhook event names: the `events` of a webhook are the contract's event names or `*`, as an enum;
 * - deliveries: the 3.1 `webhooks` section describes the POST each event is delivered as, with its headers and
 *   payload schema (CONTRACT §11);
 * - idempotent writes: every management POST takes `Idempotency-Key` (CONTRACT §16), but the release upload, whose
 *   body is streamed and not kept.
 * The `servers` entry depends on the request (its origin), so the server adds it when it serves the document.
 */
import { Model } from "@lm/domain/core"

type Json = Record<string, any>

/** Whether a value is a JSON object (not an array). */
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

/** Removes the safe-integer range from every integer schema in `value` (in place). */
const dropSafeIntegerRange = (value: unknown): void => {
  if (Array.isArray(value)) return value.forEach(dropSafeIntegerRange)
  if (!isObject(value)) return
  if (value.type === "integer") {
    if (value.minimum === Number.MIN_SAFE_INTEGER) delete value.minimum
    if (value.maximum === Number.MAX_SAFE_INTEGER) delete value.maximum
  }
  for (const inner of Object.values(value)) dropSafeIntegerRange(inner)
}

const isIdName = (name: unknown): boolean => name === "id" || (typeof name === "string" && name.endsWith("_id"))

/** Path ids as positive integers. */
const integerPathIds = (paths: Json): void => {
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item as Json)) {
      for (const parameter of (isObject(operation) ? operation.parameters ?? [] : []) as Array<Json>) {
        if (parameter.in === "path" && isIdName(parameter.name)) {
          const { description } = parameter.schema ?? {}
          parameter.schema = { type: "integer", minimum: 1, ...(description === undefined ? {} : { description }) }
        }
      }
    }
  }
}

/** The `Idempotency-Key` header of a management POST. */
const idempotencyKey: Json = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description: "1 to 255 printable ASCII characters. The first answer (status and body) is kept for 24 h per API key " +
    "and key: a repeat of the same request gets it again with `Idempotent-Replayed: true` and changes nothing; the " +
    "same key with another request is 422 `idempotency_key_reused`; a repeat while the first runs is 409 " +
    "`idempotency_key_in_use`.",
  schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x20-\\x7e]+$" }
}

/** `Idempotency-Key` on every management POST whose body is read up front (not a multipart upload). */
const idempotencyHeaders = (paths: Json): void => {
  for (const item of Object.values(paths)) {
    const post = (item as Json).post
    const management = isObject(post) && Array.isArray(post.security) && post.security.length > 0
    if (!management || isObject(post.requestBody?.content?.["multipart/form-data"])) continue
    post.parameters = [...(post.parameters ?? []), idempotencyKey]
  }
}

/** What a webhook's `events` may hold: the contract's event names, or `*` for all. */
const subscribable = [...Model.webhookEventTypes, Model.allWebhookEvents]

/** The `events` arrays of the webhook routes' bodies and answers as enums of event names (in place). */
const webhookEventEnums = (value: unknown): void => {
  if (Array.isArray(value)) return value.forEach(webhookEventEnums)
  if (!isObject(value)) return
  const events = isObject(value.properties) ? value.properties.events : undefined
  for (const schema of [events, ...(isObject(events) && Array.isArray(events.anyOf) ? events.anyOf : [])]) {
    if (isObject(schema) && schema.type === "array" && isObject(schema.items) && schema.items.type === "string") {
      schema.items = { ...schema.items, enum: subscribable }
    }
  }
  for (const inner of Object.values(value)) webhookEventEnums(inner)
}

/** The component name of an event's delivery payload. */
const payloadName = (type: string) => `lm_WebhookEvent_${type.replaceAll(".", "_")}`

/** The body every delivery POSTs, for one event type. */
const payloadSchema = (type: string): Json => ({
  type: "object",
  description: `The body of a \`${type}\` delivery.`,
  required: ["id", "type", "created_at", "data"],
  properties: {
    id: { type: "integer", minimum: 0, description: "The event's id: the same on every retry (0 for a ping)." },
    type: { type: "string", const: type },
    created_at: { type: "string", format: "date-time", description: "When the event happened (ISO 8601, UTC)." },
    data: {
      type: "object",
      additionalProperties: true,
      description: "What the event is about: the ids and keys of its subject (`license_key`, `machine_id`, ...) and what changed."
    }
  }
})

const deliveryHeader = (name: string, description: string): Json => ({
  name,
  in: "header",
  required: true,
  description,
  schema: { type: "string" }
})

/** The `webhooks` section: one delivery per event type. */
const webhooks = (): Json =>
  Object.fromEntries(Model.webhookEventTypes.map((type) => [type, {
    post: {
      operationId: `webhook.${type}`,
      summary: `The \`${type}\` event`,
      description: "POSTed to every active webhook subscribed to this event (or to `*`), at least once; 2xx is delivered, " +
        "anything else is retried on `LM_WEBHOOK_RETRY_SCHEDULE`. Verify `X-LM-Signature` before trusting the body.",
      tags: ["Webhooks"],
      parameters: [
        deliveryHeader("X-LM-Event", "The event type."),
        deliveryHeader("X-LM-Delivery", "The delivery's id: the same on every attempt."),
        deliveryHeader(
          "X-LM-Signature",
          "`t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<raw body>\" keyed with the UTF-8 bytes of the webhook's secret>`."
        )
      ],
      requestBody: {
        required: true,
        content: { "application/json": { schema: { $ref: `#/components/schemas/${payloadName(type)}` } } }
      },
      responses: {
        "200": { description: "Delivered (any 2xx status is)." },
        default: { description: "Not delivered: the delivery is attempted again later." }
      }
    }
  }]))

/** The document finished as the module comment says; a new object, `spec` is left as it was. */
export const finishOpenApi = (spec: Json): Json => {
  const document = structuredClone(spec)
  dropSafeIntegerRange(document)
  if (isObject(document.paths)) {
    integerPathIds(document.paths)
    idempotencyHeaders(document.paths)
  }
  webhookEventEnums(document)
  document.components = { ...document.components }
  document.components.schemas = {
    ...document.components.schemas,
    ...Object.fromEntries(Model.webhookEventTypes.map((type) => [payloadName(type), payloadSchema(type)]))
  }
  document.webhooks = webhooks()
  return document
}
