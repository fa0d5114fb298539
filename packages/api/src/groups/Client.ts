/**
 * The public client routes of the lm/v1 API (CONTRACT §4, §5): `validate`, `activate`, `deactivate`,
 * `heartbeat`, `crl` and `public-key` (also served as `public-keyk`, the seed's spelling). They need no API key;
 * credentials sent to them are ignored. Unknown body fields are ignored too (a client's `ip_address` included):
 * the machine's address is always the one the server saw.
 */
import { Schema } from "effect"
import { Model, Validation } from "@lm/domain/core"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Conflict, Forbidden, NotFound, TooManyRequests, UnprocessableEntity } from "../wire/ApiErrors.js"
import { Success } from "../wire/Envelope.js"
import { EntitlementCodes, LicenseWire, MachineWire, MetaInput, ShortText, Time, wireRecord } from "../wire/Wire.js"

/** A license key as sent; the domain trims, upper-cases and checks its format (400 `rest_invalid_param`). */
const LicenseKey = Schema.String.annotate({
  description: "Four dash-separated groups of A-Z and 0-9; surrounding spaces and lower case are accepted."
})

/** A device fingerprint: 1–255 characters, none of them a control character (Unicode category Cc). */
export const Fingerprint = Schema.String.check(
  Schema.isBetweenLength(1, Model.fingerprintRule.maxLength, { message: `must be 1 to ${Model.fingerprintRule.maxLength} characters` }),
  Schema.isPattern(Model.fingerprintRule.pattern, { message: "must contain only printable characters" })
).annotate({ description: "The device's fingerprint: 1 to 255 printable characters." })

const NullableShortText = Schema.NullOr(ShortText)

/** A hardware component a client reports at activation. */
export const ComponentInput = Schema.Struct({
  kind: Model.ComponentKind,
  fingerprint: Fingerprint,
  name: Schema.optionalKey(NullableShortText)
})

/** The validate nonce: a string of at most 64 characters or an integer; echoed in the response and signed. */
export const Nonce = Schema.Union([
  Schema.String.check(Schema.isMaxLength(64, { message: "must be at most 64 characters" })),
  Schema.Int
]).annotate({ description: "A string of at most 64 characters, or an integer. Echoed back and signed." })

/** Body of `POST /validate`. */
export const ValidatePayload = Schema.Struct({
  license_key: LicenseKey,
  fingerprint: Schema.optionalKey(Schema.NullOr(Fingerprint)),
  nonce: Schema.optionalKey(Schema.NullOr(Nonce)),
  entitlements: Schema.optionalKey(Schema.NullOr(EntitlementCodes).annotate({
    description: "Entitlement codes the client needs (at most 64): one the license does not hold answers " +
      "`entitlements_missing`, after the license checks and before the machine checks, naming the codes in `missing`."
  }))
})

/**
 * What {@link ValidatePayload} decodes the two common validate bodies to, `{license_key}` and `{license_key,
 * fingerprint}` (a string key; a null or valid fingerprint), without running the schema; undefined for any
 * other input, which the schema decodes (or refuses) as always. The fast path (`FastPath.ts`) tries it first;
 * its test compares both for odd bodies.
 */
export const commonValidatePayload = (input: unknown): typeof ValidatePayload.Type | undefined => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return undefined
  const body = input as Record<string, unknown>
  const licenseKey = body.license_key
  if (typeof licenseKey !== "string") return undefined
  const keys = Object.keys(body)
  if (keys.length === 1 && keys[0] === "license_key") return { license_key: licenseKey }
  if (keys.length !== 2 || !(keys[0] === "fingerprint" ? keys[1] === "license_key" : keys[0] === "license_key" && keys[1] === "fingerprint")) {
    return undefined
  }
  const fingerprint = body.fingerprint
  if (fingerprint === null) return { license_key: licenseKey, fingerprint: null }
  return typeof fingerprint === "string" && Model.isFingerprint(fingerprint) ? { license_key: licenseKey, fingerprint } : undefined
}

/** The answer of `POST /validate` (always 200 for an existing key). */
export const ValidateResponse = Schema.Struct({
  valid: Schema.Boolean,
  code: Schema.Literals(Validation.validationCodes).annotate({ description: "`valid`, or the first check that failed, in this order." }),
  license: LicenseWire,
  machine: Schema.NullOr(MachineWire).annotate({ description: "The active machine of the fingerprint sent, or null." }),
  needs_activation: Schema.Boolean.annotate({
    description: "True when the fingerprint sent holds no seat and a seat is free for it."
  }),
  signed_payload: Schema.NullOr(Schema.String).annotate({
    description: "A signed `license` token (see `/public-key`) when `valid` is true; null for a refusal, so that a " +
      "client caching signed payloads never caches a refusal as an entitlement."
  }),
  signed_refusal: Schema.NullOr(Schema.String).annotate({
    description: "A signed `refusal` token (the server refused, and why; it never entitles) when `valid` is false; " +
      "null when valid."
  }),
  server_time: Time,
  nonce: Schema.optionalKey(Nonce).annotate({ description: "The nonce sent; absent when none was sent." }),
  missing: Schema.optionalKey(Schema.Array(Schema.String)).annotate({
    description: "With `entitlements_missing`: the codes asked for that the license does not hold; absent otherwise."
  })
})
export type ValidateResponse = typeof ValidateResponse.Type

/** Body of `POST /activate`. */
export const ActivatePayload = Schema.Struct({
  license_key: LicenseKey,
  fingerprint: Fingerprint,
  name: Schema.optionalKey(NullableShortText),
  hostname: Schema.optionalKey(NullableShortText),
  platform: Schema.optionalKey(NullableShortText),
  app_version: Schema.optionalKey(NullableShortText),
  components: Schema.optionalKey(
    Schema.Array(ComponentInput).check(Schema.isMaxLength(32, { message: "must have at most 32 components" }))
  ),
  meta: Schema.optionalKey(MetaInput)
})

/** The answer of `POST /activate`: the machine object with its signed `certificate` beside its fields. */
export const ActivatedMachine = Schema.Struct({
  ...MachineWire.fields,
  certificate: Schema.String.annotate({ description: "A signed `machine` token (see `/public-key`)." })
})
export type ActivatedMachine = typeof ActivatedMachine.Type

/** Body of `POST /deactivate`: the machine by `fingerprint` or by `machine_id`. */
export const DeactivatePayload = Schema.Struct({
  license_key: LicenseKey,
  fingerprint: Schema.optionalKey(Fingerprint),
  machine_id: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0, { message: "must be a positive integer" })))
})

/** The answer of `POST /deactivate`. */
export const DeactivateResponse = Schema.Struct({ deactivated: Schema.Literal(true), machine: MachineWire })
export type DeactivateResponse = typeof DeactivateResponse.Type

/** Body of `POST /heartbeat`. */
export const HeartbeatPayload = Schema.Struct({
  license_key: LicenseKey,
  fingerprint: Fingerprint,
  app_version: Schema.optionalKey(NullableShortText)
})

/** The answer of `POST /heartbeat`. */
export const HeartbeatResponse = Schema.Struct({
  machine: MachineWire,
  certificate: Schema.String.annotate({ description: "A fresh signed `machine` token." }),
  next_heartbeat_before: Time.annotate({ description: "Beat again before this time to keep the seat." }),
  lease_expires_at: Schema.NullOr(Time).annotate({ description: "The renewed lease end (floating licenses), else null." })
})
export type HeartbeatResponse = typeof HeartbeatResponse.Type

/** The answer of `GET /crl`. */
export const CrlResponse = Schema.Struct({
  crl: Schema.String.annotate({
    description: "A signed `crl` token listing `revoked_keys`, `suspended_keys`, `revoked_fingerprints` " +
      "(SHA-256 hex), `revoked_machines` (ids) and `seq`."
  }),
  generated_at: Time.annotate({ description: "When the list's content last changed." }),
  next_update: Time.annotate({ description: "Fetch again before this time at the latest." }),
  kid: Schema.String
})
export type CrlResponse = typeof CrlResponse.Type

/** A key still accepted for verification on the wire: a stored signing key without its seed. */
export const PublishedKeyWire = wireRecord(Model.StoredSigningKey, { omit: ["seed", "createdAt"] })

/** The answer of `GET /public-key`. */
export const PublicKeyResponse = Schema.Struct({
  public_key: Schema.String.annotate({ description: "The current raw 32-byte Ed25519 key, standard base64 with padding." }),
  algorithm: Schema.Literal("Ed25519"),
  kid: Schema.String.annotate({ description: "Key id of the current key: first 16 hex of SHA-256 of the raw key." }),
  pem: Schema.String.annotate({ description: "The current key as SPKI PEM." }),
  keys: Schema.Array(PublishedKeyWire).annotate({
    description: "Every key still accepted for verification, the current one first."
  })
})
export type PublicKeyResponse = typeof PublicKeyResponse.Type

/** `Cache-Control` of `GET /crl`: caches may keep it but must revalidate (ETag) before every use. */
export const crlCacheControl = "public, no-cache"

/** `Cache-Control` of `GET /public-key`: short, so that a rotated key shows up within a minute. */
export const publicKeyCacheControl = "public, max-age=60"

/**
 * OpenAPI: a public route's body may carry other fields, which are ignored (the document generator marks every
 * object closed, as the management writes are).
 */
const ignoresUnknownFields = (operation: Record<string, any>): Record<string, any> => {
  const schema = operation.requestBody?.content?.["application/json"]?.schema
  if (schema !== undefined && schema.additionalProperties === false) schema.additionalProperties = true
  return operation
}

const publicKeyEndpoint = (name: "publicKey" | "publicKeyAlias", path: "/public-key" | "/public-keyk") =>
  HttpApiEndpoint.get(name, path, { success: Success(PublicKeyResponse), error: TooManyRequests })

/** The public client routes; each may answer 429 `rest_rate_limited` (CONTRACT §11, the public rate limits). */
export class ClientGroup extends HttpApiGroup.make("client")
  .add(
    HttpApiEndpoint.post("validate", "/validate", {
      payload: ValidatePayload,
      success: Success(ValidateResponse),
      error: [NotFound, TooManyRequests]
    }).annotateMerge(OpenApi.annotations({
      summary: "Validate a license (and a device)",
      transform: ignoresUnknownFields,
      description: "Always 200 for an existing key; `valid` and `code` say whether it may be used. Codes are " +
        "checked in this order, the first failure wins: `blacklisted`, `license_terminated`, `license_revoked`, " +
        "`license_suspended`, `license_pending`, `license_expired`, `machine_limit_exceeded` (more machines hold " +
        "a seat than the ceiling allows), then with a fingerprint `machine_revoked`, `fingerprint_not_activated`. " +
        "A valid answer carries `signed_payload`, the same answer signed for offline use (valid for the offline TTL, " +
        "7 days by default); a refusal carries `signed_refusal` instead, and `signed_payload` is null. Both repeat " +
        "the fingerprint and nonce sent. `fingerprint: null` and `nonce: null` count as not sent. " +
        "A malformed key is 400 `rest_invalid_param`; an unknown key 404 `license_not_found`."
    })),
    HttpApiEndpoint.post("activate", "/activate", {
      payload: ActivatePayload,
      success: [
        Success(ActivatedMachine).annotate({ httpApiStatus: 201, description: "A seat was taken for the fingerprint." }),
        Success(ActivatedMachine).annotate({
          description: "The fingerprint already held a seat: the same machine, no new seat (idempotent)."
        })
      ],
      error: [Forbidden, NotFound, UnprocessableEntity, TooManyRequests]
    }).annotateMerge(OpenApi.annotations({
      summary: "Activate a device on a license",
      transform: ignoresUnknownFields,
      description: "Takes a seat for the fingerprint. The response is the Machine object with a signed " +
        "`certificate` added beside its fields (201 for a new seat, 200 when the fingerprint already held one; " +
        "both carry a fresh certificate). The machine's `ip_address` is the caller's socket address (or " +
        "`X-Forwarded-For` behind a trusted proxy); an `ip_address` in the body is ignored. A machine `meta` is " +
        "limited to 16 KiB of JSON, like a license's. Refusals: 403 `blacklisted`, `license_terminated`, " +
        "`license_revoked`, `license_suspended`, `license_pending`, `license_expired`, `machine_revoked`; 422 " +
        "`machine_limit_exceeded` with `data.max_activations`, `data.activation_count` and `data.ceiling`."
    })),
    HttpApiEndpoint.post("deactivate", "/deactivate", {
      payload: DeactivatePayload,
      success: Success(DeactivateResponse),
      error: [NotFound, TooManyRequests]
    }).annotateMerge(OpenApi.annotations({
      summary: "Deactivate a device and free its seat",
      transform: ignoresUnknownFields,
      description: "Names the machine by `fingerprint` or `machine_id` (one is required; when both are sent, " +
        "`fingerprint` is used). A machine already inactive answers the same 200. A machine that is not on that " +
        "license: 404 `machine_not_found`."
    })),
    HttpApiEndpoint.post("heartbeat", "/heartbeat", {
      payload: HeartbeatPayload,
      success: Success(HeartbeatResponse),
      error: [Forbidden, NotFound, Conflict, TooManyRequests]
    }).annotateMerge(OpenApi.annotations({
      summary: "Record a heartbeat (renews a floating lease)",
      transform: ignoresUnknownFields,
      description: "Records the beat and renews a floating lease. A fingerprint never activated on the license: " +
        "404 `machine_not_found`; a deactivated, culled or lease-expired machine: 409 `machine_inactive` " +
        "(activate again); a revoked machine: 403 `machine_revoked`; a license that is not valid: 403 with its " +
        "`license_*` code (or `blacklisted`)."
    })),
    HttpApiEndpoint.get("crl", "/crl", {
      headers: { "if-none-match": Schema.optionalKey(Schema.String) },
      success: [
        Success(CrlResponse).annotate({
          description: "The current list. Sent with a strong `ETag` and `Cache-Control: public, no-cache`."
        }),
        HttpApiSchema.Empty(304).annotate({ description: "`If-None-Match` matched the current `ETag`." })
      ],
      error: TooManyRequests
    }).annotateMerge(OpenApi.annotations({
      summary: "The signed certificate revocation list",
      description: "Reflects every suspend, revoke, reinstate, terminate and machine revoke in the very next " +
        "request (also one made by another server process); `seq` grows on every change. " +
        `\`Cache-Control: ${crlCacheControl}\`: caches may store the list but must revalidate with ` +
        "`If-None-Match` before each use, which answers 304 (no body) while nothing changed, so a revocation is " +
        "never served stale. The list is re-signed only when its content or the signing key changes."
    })),
    publicKeyEndpoint("publicKey", "/public-key").annotateMerge(OpenApi.annotations({
      summary: "The public keys that verify signed tokens",
      description: "Tokens are `base64url(json).base64url(signature)`, Ed25519 over the ASCII bytes of the first " +
        "part; pick the key by the payload's `kid` from `keys` (older keys stay listed after a rotation so " +
        `tokens already issued still verify). \`Cache-Control: ${publicKeyCacheControl}\`.`
    })),
    publicKeyEndpoint("publicKeyAlias", "/public-keyk").annotateMerge(OpenApi.annotations({
      summary: "Alias of /public-key",
      description: "The same answer as `/public-key`, served under the spelling of the original specification.",
      deprecated: true
    }))
  )
  .annotateMerge(OpenApi.annotations({
    description: "What licensed software calls (public, no API key): validate, activate, deactivate, heartbeat, the revocation list and the public keys."
  }))
{}
