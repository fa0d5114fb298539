/**
 * The floor: bare `node:http` doing the work no implementation can skip on the three benchmarked routes, and
 * nothing else (no store, no framework). Each request's JSON body is read and parsed and its `license_key`
 * checked; `/validate` answers the contract's envelope with a license and validate's `signed_payload` (a
 * canonical `typ: "license"` payload of the same fields and size as the real one, signed with Ed25519 by
 * node:crypto through a KeyObject imported once); `/activate` answers a machine with its signed `certificate`;
 * `/deactivate` answers `{deactivated, machine}` unsigned. Every response carries `X-Request-Id`.
 *
 * Run: `node bench/floor.ts` (prints `Listening on http://127.0.0.1:<port>/api/lm/v1`; `PORT`, `HOST` as the
 * server).
 */
import { createPrivateKey, createPublicKey, randomBytes, randomUUID, sign } from "node:crypto"
import * as http from "node:http"

const base = "/api/lm/v1"
const keyPattern = /^[A-Z0-9]{1,24}-[A-Z0-9]{1,24}-[A-Z0-9]{1,24}-[A-Z0-9]{1,24}$/

// RFC 8410 PKCS#8 wrapping of a 32-byte Ed25519 seed; the key is imported once, as the server's signer does.
const pkcs8Prefix = Buffer.from("302e020100300506032b657004220420", "hex")
const privateKey = createPrivateKey({ key: Buffer.concat([pkcs8Prefix, randomBytes(32)]), format: "der", type: "pkcs8" })
const rawPublicKey = createPublicKey(privateKey).export({ format: "der", type: "spki" }).subarray(-32)
const kid = rawPublicKey.subarray(0, 8).toString("hex")

const s = JSON.stringify
const iso = (millis: number) => new Date(millis).toISOString()
const started = Date.now()

/** `base64url(json).base64url(signature)`, the signature over the ASCII of the first part. */
const token = (json: string): string => {
  const head = Buffer.from(json, "utf8").toString("base64url")
  return `${head}.${sign(null, Buffer.from(head, "latin1"), privateKey).toString("base64url")}`
}

const licenseWire = (key: string, activationCount: number) => ({
  id: 1,
  license_key: key,
  status: activationCount > 0 ? "active" : "inactive",
  product_id: null,
  order_id: null,
  user_id: null,
  max_activations: 64,
  activation_count: activationCount,
  overage_strategy: "deny",
  is_floating: false,
  lease_duration: 600,
  require_heartbeat: false,
  heartbeat_interval: 600,
  valid_for_days: null,
  expires_at: null,
  grace_days: 0,
  activated_at: iso(started),
  source: "api",
  generator_id: null,
  subscription_id: null,
  meta: {},
  created_at: iso(started),
  updated_at: iso(started)
})

const machineWire = (fingerprint: string, status: "active" | "inactive", ip: string | null) => ({
  id: 1,
  license_id: 1,
  fingerprint,
  name: null,
  hostname: null,
  platform: null,
  app_version: null,
  ip_address: ip,
  status,
  activated_at: iso(started),
  deactivated_at: status === "active" ? null : iso(Date.now()),
  deactivation_reason: status === "active" ? null : "client",
  last_heartbeat_at: null,
  lease_expires_at: null,
  meta: {},
  components: [],
  created_at: iso(started)
})

const validate = (key: string, fingerprint: string | null, nonce: string | number | null, ip: string | null) => {
  const now = Date.now()
  const iat = Math.floor(now / 1000)
  const payload = `{"v":1,"typ":"license","kid":${s(kid)},"key":${s(key)},"lid":1,"pid":null,"status":"active","valid":true,"code":"valid","expires":null,"grace_days":0,"max":64,"fp":${
    s(fingerprint)
  },"nonce":${s(nonce)},"iat":${iat},"exp":${iat + 604_800}}`
  return {
    valid: true,
    code: "valid",
    license: licenseWire(key, 1),
    machine: fingerprint === null ? null : machineWire(fingerprint, "active", ip),
    needs_activation: false,
    signed_payload: token(payload),
    signed_refusal: null,
    server_time: iso(now),
    ...(nonce === null ? {} : { nonce })
  }
}

const activate = (key: string, fingerprint: string, ip: string | null) => {
  const iat = Math.floor(Date.now() / 1000)
  const payload = `{"v":1,"typ":"machine","kid":${s(kid)},"key":${s(key)},"lid":1,"pid":null,"mid":1,"fp":${
    s(fingerprint)
  },"expires":null,"max":64,"iat":${iat},"exp":${iat + 2_592_000}}`
  return { ...machineWire(fingerprint, "active", ip), certificate: token(payload) }
}

const reply = (res: http.ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "x-request-id": randomUUID()
  })
  res.end(text)
}

const invalid = (res: http.ServerResponse, field: string) =>
  reply(res, 400, { success: false, code: "rest_invalid_param", message: "Invalid parameter(s).", data: { status: 400, params: { [field]: "is invalid" } } })

const handle = (req: http.IncomingMessage, res: http.ServerResponse, raw: string) => {
  let body: Record<string, unknown>
  try {
    const parsed: unknown = raw === "" ? {} : JSON.parse(raw)
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return invalid(res, "body")
    body = parsed as Record<string, unknown>
  } catch {
    return reply(res, 400, { success: false, code: "rest_invalid_json", message: "Invalid JSON body.", data: { status: 400 } })
  }
  const key = typeof body.license_key === "string" ? body.license_key.trim().toUpperCase() : ""
  if (!keyPattern.test(key)) return invalid(res, "license_key")
  const fingerprint = typeof body.fingerprint === "string" && body.fingerprint !== "" ? body.fingerprint : null
  const ip = req.socket.remoteAddress ?? null
  switch (req.url) {
    case `${base}/validate`: {
      const nonce = typeof body.nonce === "string" || typeof body.nonce === "number" ? body.nonce : null
      return reply(res, 200, { success: true, data: validate(key, fingerprint, nonce, ip), meta: {} })
    }
    case `${base}/activate`:
      if (fingerprint === null) return invalid(res, "fingerprint")
      return reply(res, 201, { success: true, data: activate(key, fingerprint, ip), meta: {} })
    case `${base}/deactivate`:
      if (fingerprint === null) return invalid(res, "fingerprint")
      return reply(res, 200, { success: true, data: { deactivated: true, machine: machineWire(fingerprint, "inactive", ip) }, meta: {} })
    default:
      return reply(res, 404, { success: false, code: "rest_no_route", message: "No route.", data: { status: 404 } })
  }
}

const server = http.createServer((req, res) => {
  if (req.method !== "POST") return reply(res, 404, { success: false, code: "rest_no_route", message: "No route.", data: { status: 404 } })
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => handle(req, res, Buffer.concat(chunks).toString("utf8")))
})

const host = process.env.HOST ?? "127.0.0.1"
server.listen(Number(process.env.PORT ?? 0), host, () => {
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  console.log(`Listening on http://${host}:${port}${base} (floor: node:http + node:crypto Ed25519)`)
})
process.on("SIGTERM", () => server.close(() => process.exit(0)))
