/**
 * What an attacker puts between an app and its server, for the SDK tests: an in-process `node:http` proxy that
 * forwards every request to the real server (its `Host` header kept, so the absolute URLs the server builds point
 * back at the proxy) and lets a test rewrite the answers; and a forger with an Ed25519 key pair of its own that
 * signs tokens in the contract's format, as a fake server re-signing `/validate` and `/crl` would.
 */
import { createHash, generateKeyPairSync, type KeyObject, sign } from "node:crypto"
import { createServer, request as httpRequest, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"

/** An answer as the proxy got it (or sends it). */
export interface ProxiedAnswer {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
}

/** Rewrites the real server's answer to `method path` (the path with its query); return it unchanged to pass it on. */
export type Rewrite = (request: { readonly method: string; readonly path: string }, answer: ProxiedAnswer) => ProxiedAnswer

export interface Proxy {
  /** The proxy's origin: use it as the app's `baseUrl`. */
  readonly origin: string
  readonly close: () => Promise<void>
}

const forward = (target: URL, method: string, path: string, headers: IncomingHttpHeaders, body: Buffer) =>
  new Promise<ProxiedAnswer>((resolve, reject) => {
    const outgoing = httpRequest({ host: target.hostname, port: target.port, method, path, headers }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => resolve({ status: response.statusCode ?? 502, headers: response.headers, body: Buffer.concat(chunks) }))
      response.on("error", reject)
    })
    outgoing.on("error", reject)
    outgoing.end(body)
  })

/** A proxy in front of `targetOrigin` that passes each answer through `rewrite`. */
export const startProxy = async (targetOrigin: string, rewrite: Rewrite): Promise<Proxy> => {
  const target = new URL(targetOrigin)
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const method = req.method ?? "GET"
      const path = req.url ?? "/"
      forward(target, method, path, req.headers, Buffer.concat(chunks)).then(
        (answer) => {
          const out = rewrite({ method, path }, answer)
          const { "content-length": _length, "transfer-encoding": _encoding, connection: _connection, ...headers } = out.headers
          res.writeHead(out.status, { ...headers, "content-length": String(out.body.length) })
          res.end(out.body)
        },
        (error: unknown) => res.writeHead(502).end(String(error))
      )
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(() => resolve()))
    }
  }
}

/** The JSON body of an answer, and an answer with a new JSON body. */
export const jsonOf = (answer: ProxiedAnswer): any => JSON.parse(answer.body.toString("utf8"))
export const withJson = (answer: ProxiedAnswer, body: unknown): ProxiedAnswer => {
  const { etag: _etag, ...headers } = answer.headers
  return { ...answer, headers: { ...headers, "content-type": "application/json" }, body: Buffer.from(JSON.stringify(body)) }
}

/** The payload of a token, unverified. */
export const payloadOf = (token: string): Record<string, any> =>
  JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8"))

/** An Ed25519 key pair in the contract's terms: its raw public key in base64 and its kid. */
export interface KeyPair {
  readonly kid: string
  /** The raw 32-byte public key, standard base64 with padding (`public_key` of `/public-key`). */
  readonly publicKey: string
  readonly privateKey: KeyObject
  /** The 32-byte seed, base64 (what `LM_SIGNING_KEY` takes). */
  readonly seed: string
}

export const newKeyPair = (): KeyPair => {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519")
  const raw = publicKey.export({ format: "der", type: "spki" }).subarray(12)
  return {
    kid: createHash("sha256").update(raw).digest("hex").slice(0, 16),
    publicKey: raw.toString("base64"),
    privateKey,
    seed: privateKey.export({ format: "der", type: "pkcs8" }).subarray(16).toString("base64")
  }
}

/** Signs `payload` (its `kid` replaced by the key's) as a compact token. */
export const signWith = (key: KeyPair, payload: Record<string, unknown>): string => {
  const head = Buffer.from(JSON.stringify({ ...payload, kid: key.kid })).toString("base64url")
  return `${head}.${sign(null, Buffer.from(head), key.privateKey).toString("base64url")}`
}

const TEN_YEARS = 10 * 365 * 86_400

/** A license token of `key` saying valid for ten years, built on a genuine token's payload (license or refusal). */
export const forgedLicense = (key: KeyPair, genuine: Record<string, any>): string =>
  signWith(key, {
    v: 1,
    typ: "license",
    kid: key.kid,
    key: genuine.key,
    lid: genuine.lid,
    pid: genuine.pid ?? null,
    status: "active",
    valid: true,
    code: "valid",
    expires: null,
    grace_days: 0,
    max: null,
    fp: genuine.fp,
    nonce: genuine.nonce,
    iat: genuine.iat,
    exp: genuine.iat + TEN_YEARS
  })

/** An empty revocation list of `key`, with a sequence number above any real one. */
export const forgedCrl = (key: KeyPair): string => {
  const iat = Math.floor(Date.now() / 1000)
  return signWith(key, {
    v: 1,
    typ: "crl",
    kid: key.kid,
    seq: 1_000_000_000,
    revoked_keys: [],
    suspended_keys: [],
    revoked_fingerprints: [],
    revoked_machines: [],
    generated_at: new Date(iat * 1000).toISOString(),
    iat
  })
}

/**
 * A fake server: the real one's answers re-signed with `key`. `/public-key` lists only `key`; `/validate` says
 * valid for ten years whatever the license's state; `/crl` is an empty list of its own.
 */
export const fakeServer = (key: KeyPair): Rewrite => ({ path }, answer) => {
  if (answer.status !== 200) return answer
  if (path.endsWith("/public-key")) {
    return withJson(answer, {
      success: true,
      data: { public_key: key.publicKey, algorithm: "Ed25519", kid: key.kid, pem: "", keys: [{ kid: key.kid, public_key: key.publicKey, current: true }] },
      meta: {}
    })
  }
  if (path.endsWith("/validate")) {
    const body = jsonOf(answer)
    const genuine = payloadOf(body.data.signed_payload ?? body.data.signed_refusal)
    const data = { ...body.data, valid: true, code: "valid", signed_payload: forgedLicense(key, genuine), signed_refusal: null }
    return withJson(answer, { ...body, data })
  }
  if (path.endsWith("/crl")) {
    const body = jsonOf(answer)
    return withJson(answer, { ...body, data: { ...body.data, crl: forgedCrl(key), kid: key.kid } })
  }
  return answer
}
