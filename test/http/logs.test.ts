/**
 * Issue 30, logs (CONTRACT §18): `lm serve` as a child process with JSON logs at debug level and the access log.
 * Requests carrying every kind of secret (API consumer secrets, good and bad, a new key's secret, license keys in
 * bodies and paths, refused and malformed ones included, a download token, a webhook's secret) are sent; then
 * every line the process wrote is JSON with time, level and message, each request has its access line (method,
 * route template, status, duration, request id, client IP), and no secret appears anywhere in the output.
 */
import { afterEach, expect, it } from "vitest"
import { adminAuth, adminKey } from "../../packages/http/test/support/App.js"
import { eventually } from "../support/eventually.js"
import { exitWithin, type ServerProcess, spawnServer, waitForOutput } from "./support/Child.js"

let server: ServerProcess | undefined
afterEach(() => {
  if (server !== undefined && server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
  server = undefined
})

const json = { "content-type": "application/json" }

it("JSON lines with time, level, message; an access line per request; no secret in any line", async () => {
  server = spawnServer({
    PORT: "0",
    HOST: "127.0.0.1",
    LM_STORAGE: "memory",
    LM_SWEEP_INTERVAL: "0",
    LM_LOG_FORMAT: "json",
    LM_LOG_LEVEL: "debug",
    LM_ACCESS_LOG: "1",
    LM_WEBHOOK_ALLOW_INSECURE: "1",
    LM_WEBHOOK_ALLOW_PRIVATE: "1",
    LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
    LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret
  })
  const [, apiBase] = await waitForOutput(server, /Listening on (http:\/\/\S+?)[\s"]/)
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = { authorization: adminAuth }) => {
    const response = await fetch(`${apiBase}${path}`, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : json) },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
    })
    const text = await response.text()
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
  }

  const secrets: Array<string> = [adminKey.consumerSecret]
  const issued = await call("POST", "/api-keys", { description: "logs", scope: "read_write" })
  expect(issued.status).toBe(201)
  secrets.push(issued.body.data.consumer_secret)
  const wrongSecret = `cs_${"9f".repeat(20)}`
  secrets.push(wrongSecret)
  const wrongAuth = `Basic ${Buffer.from(`${adminKey.consumerKey}:${wrongSecret}`).toString("base64")}`
  expect((await call("GET", "/licenses", undefined, { authorization: wrongAuth })).status).toBe(401)

  const license = await call("POST", "/licenses", { max_activations: 1 })
  expect(license.status).toBe(201)
  const key: string = license.body.data.license_key
  secrets.push(key, key.toLowerCase())
  const unknownKey = "QWER-TYUI-OPAS-DFGH"
  secrets.push(unknownKey)
  expect((await call("POST", "/validate", { license_key: key }, {})).status).toBe(200)
  expect((await call("POST", "/validate?stack=1", { license_key: key.toLowerCase(), fingerprint: "m" }, {})).status).toBe(200)
  expect((await call("POST", "/activate", { license_key: key, fingerprint: "m-1" }, {})).status).toBe(201)
  expect((await call("POST", "/activate", { license_key: key, fingerprint: "m-2" }, {})).status).toBe(422)
  expect((await call("POST", "/validate", { license_key: unknownKey }, {})).status).toBe(404)
  expect((await call("POST", "/validate", `{"license_key": "${unknownKey}",`, {})).status).toBe(400)
  expect((await call("GET", `/licenses/${key}`)).status).toBe(200)
  expect((await call("POST", `/licenses/${key}/revoke`)).status).toBe(200)

  const token = `eyJ2IjoxLCJ0eXAiOiJkb3dubG9hZCJ9.${"Q".repeat(86)}`
  secrets.push(token)
  expect((await call("GET", `/updates/download?token=${token}`, undefined, {})).status).toBe(403)

  const webhook = await call("POST", "/webhooks", { url: "http://127.0.0.1:9/hook", events: ["license.created"] })
  expect(webhook.status).toBe(201)
  secrets.push(webhook.body.data.secret)
  expect((await call("POST", `/webhooks/${webhook.body.data.id}/ping`)).status).toBe(200)

  // The access line of the last request is written.
  await eventually(() => expect(server!.output()).toMatch(/"route":"[^"]*\/webhooks\/:id\/ping"/))
  server.child.kill("SIGTERM")
  expect(await exitWithin(server, 20_000)).toBe(0)

  const output = server.output()
  for (const secret of secrets) expect(output, `the output holds ${secret}`).not.toContain(secret)
  const lines = output.split("\n").filter((line) => line !== "")
  for (const line of lines) {
    const entry = JSON.parse(line)
    expect(entry.time, line).toMatch(/^\d{4}-\d\d-\d\dT/)
    expect(["debug", "info", "warn", "error"], line).toContain(entry.level)
    expect(typeof entry.message, line).toBe("string")
  }
  const access = lines.map((line) => JSON.parse(line)).filter((entry) => entry.message === "request")
  expect(access.length).toBe(14)
  for (const entry of access) {
    expect(entry).toMatchObject({ method: expect.any(String), route: expect.any(String), status: expect.any(Number), client_ip: "127.0.0.1" })
    expect(entry.request_id).toMatch(/\S/)
    expect(entry.duration_ms).toBeGreaterThanOrEqual(0)
  }
  expect(access).toContainEqual(expect.objectContaining({ method: "GET", route: `${new URL(apiBase!).pathname}/licenses/:key`, status: 200 }))
  expect(access).toContainEqual(expect.objectContaining({ method: "POST", route: `${new URL(apiBase!).pathname}/validate`, status: 400 }))
}, 90_000)
