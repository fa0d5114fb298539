/**
 * The steps every request takes on both transports (`RequestSteps.ts`): the same request id, the same headers on
 * every answer, and one report per answer to the `RequestObserver` (where metrics plug in), whether the fast path
 * or the Effect HTTP stack answers it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { AnsweredRequest } from "../src/server/RequestSteps.js"
import { startApp, type TestApp } from "./support/App.js"
import { type CapturedLog, startEchoServer } from "./support/TestServer.js"
import { rawPost } from "./support/RawPost.js"
import { eventually } from "../../../test/support/eventually.js"

describe("the request steps", () => {
  let app: TestApp
  const answered: Array<AnsweredRequest> = []
  const reportOf = (requestId: string) => answered.filter((request) => request.requestId === requestId)

  beforeAll(async () => {
    app = await startApp("memory", { settings: { corsOrigins: ["https://app.example.com"] }, requestObserver: (request) => answered.push(request) })
  })
  afterAll(() => app?.close())

  const unknownKey = JSON.stringify({ license_key: "ZZZZ-ZZZZ-ZZZZ-ZZZZ", fingerprint: "host-1" })
  const headers = (requestId: string) => ({ "x-request-id": requestId, origin: "https://app.example.com" })

  it("run alike on the fast path and on the Effect stack", async () => {
    // A body with its length goes the fast path; the same body chunked goes through the Effect stack.
    const fast = await rawPost(app, "/validate", unknownKey, "application/json", { headers: headers("steps-fast") })
    const stack = await rawPost(app, "/validate", unknownKey, "application/json", { headers: headers("steps-stack"), chunked: true })
    expect(fast.status).toBe(404)
    expect(stack.status).toBe(404)
    for (const [reply, requestId] of [[fast, "steps-fast"], [stack, "steps-stack"]] as const) {
      expect(reply.headers["x-request-id"]).toBe(requestId)
      expect(reply.headers["access-control-allow-origin"]).toBe("https://app.example.com")
      expect(reply.headers.vary).toBe("Origin")
    }
    await eventually(() => expect(reportOf("steps-stack")).toHaveLength(1))
    expect(reportOf("steps-fast")).toEqual([
      expect.objectContaining({ transport: "fast-path", method: "POST", path: "/api/lm/v1/validate", route: "/api/lm/v1/validate", status: 404 })
    ])
    expect(reportOf("steps-stack")).toEqual([
      expect.objectContaining({ transport: "effect", method: "POST", path: "/api/lm/v1/validate", route: "/api/lm/v1/validate", status: 404 })
    ])
    for (const report of [...reportOf("steps-fast"), ...reportOf("steps-stack")]) {
      expect(report.durationMillis).toBeGreaterThanOrEqual(0)
    }
  })

  it("name the route template that answered, not the path", async () => {
    const license = await fetch(`${app.apiBase}/licenses/ZZZZ-ZZZZ-ZZZZ-ZZZZ`, { headers: { "x-request-id": "steps-template" } })
    expect(license.status).toBe(401)
    await eventually(() => expect(reportOf("steps-template")).toHaveLength(1))
    expect(reportOf("steps-template")).toEqual([
      expect.objectContaining({ path: "/api/lm/v1/licenses/ZZZZ-ZZZZ-ZZZZ-ZZZZ", route: "/api/lm/v1/licenses/:key", status: 401 })
    ])
  })

  it("report every answer of the Effect stack, unknown routes and refusals included, without the query", async () => {
    const health = await fetch(`${app.apiBase}/health`, { headers: { "x-request-id": "steps-health" } })
    const noRoute = await fetch(`${app.apiBase}/no-such-route`, { headers: { "x-request-id": "steps-404" } })
    const check = await fetch(`${app.apiBase}/updates/check?license_key=SECRET-KEY&version=1.0.0`, { headers: { "x-request-id": "steps-check" } })
    expect([health.status, noRoute.status]).toEqual([200, 404])
    await eventually(() => expect(reportOf("steps-check")).toHaveLength(1))
    expect(reportOf("steps-health")).toEqual([expect.objectContaining({ transport: "effect", method: "GET", path: "/api/lm/v1/health", status: 200 })])
    expect(reportOf("steps-404")).toEqual([expect.objectContaining({ route: "unmatched", status: 404 })])
    expect(reportOf("steps-check")).toEqual([
      expect.objectContaining({ method: "GET", path: "/api/lm/v1/updates/check", status: check.status })
    ])
  })
})

describe("a log line written while a request is served on the Effect stack", () => {
  it("finds that request's id from the fiber (requestIdOfContext), without an annotation per request", async () => {
    const logs: Array<CapturedLog> = []
    const server = await startEchoServer({ logs })
    try {
      const response = await fetch(`${server.apiBase}/echo/slow?ms=1`, { headers: { "x-request-id": "logged-in-request" } })
      expect(response.status).toBe(200)
      await eventually(() =>
        expect(logs.find((line) => line.message === "slow request started")?.requestId).toBe("logged-in-request")
      )
      expect(logs.filter((line) => line.message.startsWith("Listening")).map((line) => line.requestId)).toEqual([undefined])
    } finally {
      await server.close()
    }
  })
})
