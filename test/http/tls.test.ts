/**
 * Issue 19, HTTPS (CONTRACT §2, security settings): the real server (`lm serve`) as a child process. With
 * `LM_TLS_CERT`/`LM_TLS_KEY` it serves HTTPS itself, on the fast path and the HttpApi path, with
 * `Strict-Transport-Security` on every answer, and logs an https:// API base. `LM_FORCE_HTTPS=1` refuses plain
 * HTTP with 403 `rest_forbidden` saying HTTPS is required, unless a trusted proxy says `X-Forwarded-Proto: https`.
 * A certificate path that cannot be read refuses the start, naming the setting and the file. An update check over
 * TLS gets an https `download_url`. TLS clients that time out and never read do not keep their connection slots.
 */
import * as tls from "node:tls"
import { afterAll, afterEach, beforeAll, expect, it } from "vitest"
import { adminAuth, adminKey } from "../../packages/http/test/support/App.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "./support/Child.js"
import { httpsRequest, makeCertificate, type TestCertificate } from "./support/Tls.js"
import { eventually } from "../support/eventually.js"

let certificate: TestCertificate
beforeAll(() => {
  certificate = makeCertificate()
})
afterAll(() => certificate?.remove())

const servers: Array<ServerProcess> = []
afterEach(() => {
  for (const server of servers.splice(0)) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
})

const env = (extra: Record<string, string>) => ({
  LM_STORAGE: "memory",
  PORT: "0",
  HOST: "127.0.0.1",
  LM_SWEEP_INTERVAL: "0",
  LM_RATE_LIMIT: "off",
  LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
  LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret,
  ...extra
})

const start = async (extra: Record<string, string>, scheme = "https?") => {
  const server = spawnServer(env(extra))
  servers.push(server)
  const [, apiBase] = await waitForOutput(server, new RegExp(`Listening on (${scheme}:\\/\\/\\S+)`))
  return apiBase!
}

it("serves HTTPS on both request paths with Strict-Transport-Security; the API base it logs says https", async () => {
  const apiBase = await start({ LM_TLS_CERT: certificate.certFile, LM_TLS_KEY: certificate.keyFile, LM_FORCE_HTTPS: "1" })
  expect(apiBase).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/api\/lm\/v1$/)
  const ca = certificate.cert

  const created = await httpsRequest(`${apiBase}/licenses`, ca, { method: "POST", headers: { authorization: adminAuth }, body: { max_activations: 2 } })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  expect(created.headers["strict-transport-security"]).toBe("max-age=31536000")

  // The fast path (a JSON body with a Content-Length) and the HttpApi path (GET /health).
  const validated = await httpsRequest(`${apiBase}/validate`, ca, { method: "POST", body: { license_key: created.body.data.license_key } })
  expect(validated.status, JSON.stringify(validated.body)).toBe(200)
  expect(validated.body).toMatchObject({ success: true, data: { valid: true } })
  expect(validated.headers["strict-transport-security"]).toBe("max-age=31536000")
  const health = await httpsRequest(`${apiBase}/health`, ca)
  expect(health.status).toBe(200)
  expect(health.headers["strict-transport-security"]).toBe("max-age=31536000")

  // Errors too.
  const refused = await httpsRequest(`${apiBase}/validate`, ca, { method: "POST", body: { license_key: "NOPE" } })
  expect(refused.status).toBeGreaterThanOrEqual(400)
  expect(refused.headers["strict-transport-security"]).toBe("max-age=31536000")
}, 60_000)

it("LM_FORCE_HTTPS refuses plain HTTP with 403 rest_forbidden; a trusted proxy's X-Forwarded-Proto: https is accepted", async () => {
  const plain = await start({ LM_FORCE_HTTPS: "1" }, "http")
  for (const [method, path, body] of [["POST", "/validate", { license_key: "X" }], ["GET", "/health", undefined]] as const) {
    const answer = await fetch(`${plain}${path}`, {
      method,
      headers: { "x-forwarded-proto": "https", ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    expect(answer.status).toBe(403)
    expect(answer.headers.get("strict-transport-security")).toBeNull()
    expect(answer.headers.get("x-request-id")).toMatch(/\S/)
    const refused = (await answer.json()) as { code: string; message: string; data: { status: number } }
    expect(refused).toMatchObject({ success: false, code: "rest_forbidden", data: { status: 403 } })
    expect(refused.message).toMatch(/HTTPS is required/)
  }

  const proxied = await start({ LM_FORCE_HTTPS: "1", LM_TRUST_PROXY: "1" }, "http")
  const viaProxy = (proto: string | undefined) =>
    fetch(`${proxied}/licenses`, {
      method: "POST",
      headers: { authorization: adminAuth, "content-type": "application/json", ...(proto === undefined ? {} : { "x-forwarded-proto": proto }) },
      body: JSON.stringify({ max_activations: 1 })
    })
  const created = await viaProxy("https")
  expect(created.status).toBe(201)
  const key = ((await created.json()) as { data: { license_key: string } }).data.license_key
  const validated = await fetch(`${proxied}/validate`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-proto": "https" },
    body: JSON.stringify({ license_key: key })
  })
  expect(validated.status).toBe(200)
  expect((await viaProxy("http")).status).toBe(403)
  expect((await viaProxy(undefined)).status).toBe(403)
}, 60_000)

it("gives an update check over TLS an https download_url, which downloads over TLS", async () => {
  const apiBase = await start({ LM_TLS_CERT: certificate.certFile, LM_TLS_KEY: certificate.keyFile })
  const ca = certificate.cert
  const release = await httpsRequest(`${apiBase}/releases`, ca, {
    method: "POST",
    headers: { authorization: adminAuth },
    body: { product_id: 3, version: "1.1.0", artifact_url: "https://cdn.example.com/app-1.1.0.zip" }
  })
  expect(release.status, JSON.stringify(release.body)).toBe(201)
  const license = await httpsRequest(`${apiBase}/licenses`, ca, { method: "POST", headers: { authorization: adminAuth }, body: { product_id: 3 } })
  const check = await httpsRequest(`${apiBase}/updates/check?license_key=${license.body.data.license_key}&version=1.0.0`, ca)
  expect(check.status, JSON.stringify(check.body)).toBe(200)
  const url: string = check.body.data.download_url
  expect(url.startsWith(`${apiBase}/updates/download?token=`)).toBe(true)
  const download = await httpsRequest(url, ca)
  expect([download.status, download.headers.location]).toEqual([302, "https://cdn.example.com/app-1.1.0.zip"])
}, 60_000)

it("refuses to start when the certificate cannot be read, naming the setting and the file", async () => {
  const missing = `${certificate.dir}/missing.pem`
  const server = spawnServer(env({ LM_TLS_CERT: missing, LM_TLS_KEY: certificate.keyFile }))
  servers.push(server)
  expect(await exitWithin(server, 30_000)).not.toBe(0)
  expect(server.output()).toContain(`LM_TLS_CERT: cannot read the PEM file ${missing}`)
  expect(server.output()).not.toMatch(/Listening on/)
}, 60_000)

it("destroys the TLS sockets of 408s that are never read: holders of every slot free them, a new client is served", async () => {
  const apiBase = await start({
    LM_TLS_CERT: certificate.certFile,
    LM_TLS_KEY: certificate.keyFile,
    LM_MAX_CONNECTIONS: "4",
    LM_MAX_CONNECTIONS_PER_IP: "4",
    LM_HEADERS_TIMEOUT_SECONDS: "1",
    LM_BODY_TIMEOUT_SECONDS: "1"
  })
  const { pathname, port } = new URL(apiBase)
  const holders: Array<tls.TLSSocket> = []
  /** Four sockets (every slot) that send `texts` in turn, then read nothing after their handshake, ever. */
  const holdEverySlot = async (texts: ReadonlyArray<string>) => {
    for (let i = 0; i < 4; i++) {
      const socket = tls.connect({ host: "127.0.0.1", port: Number(port), ca: certificate.cert, servername: "localhost" })
      socket.on("error", () => {})
      holders.push(socket)
      await new Promise<void>((resolve) => socket.once("secureConnect", resolve))
      socket.pause()
      socket.write(texts[i % texts.length]!)
    }
  }
  const expectServed = () =>
    eventually(async () => {
      expect((await httpsRequest(`${apiBase}/health`, certificate.cert)).status).toBe(200)
    }, { timeout: 10_000, interval: 100 })
  try {
    // Headers that never end.
    await holdEverySlot([`GET ${pathname}/health HTTP/1.1\r\nhost: localhost\r\nx-slow: `])
    await expectServed()
    // Bodies that stop, on the fast path (Content-Length) and the HttpApi path (chunked).
    const json = "content-type: application/json\r\n"
    await holdEverySlot([
      `POST ${pathname}/validate HTTP/1.1\r\nhost: localhost\r\n${json}content-length: 100\r\n\r\n{"license_key":`,
      `POST ${pathname}/validate HTTP/1.1\r\nhost: localhost\r\n${json}transfer-encoding: chunked\r\n\r\n5\r\n{"lic\r\n`
    ])
    await expectServed()
  } finally {
    for (const socket of holders) socket.destroy()
  }
}, 60_000)
