/**
 * Background anomaly detection (CONTRACT §11, issue 17), on the memory store and on PGlite: a newly detected
 * anomaly reaches a registered webhook (a real node:http receiver on loopback) without anyone asking
 * GET /analytics/anomalies, once, however many rounds of the job see it; GET still answers it as current.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../../../test/support/eventually.js"
import { type Receiver, startReceiver, verifySignature } from "../../../test/support/receiver.js"
import { startApp, type TestApp } from "./support/App.js"
import { createLicense, expectOk, isoTime } from "./support/Management.js"

for (const store of ["memory", "pglite"] as const) {
  describe(`background anomaly detection on ${store}`, () => {
    let app: TestApp
    let receiver: Receiver
    beforeAll(async () => {
      receiver = await startReceiver()
      app = await startApp(store, {
        // A round every 100 ms; only the burst of refusals within reach.
        anomalyIntervalSeconds: 0.1,
        anomalyThresholds: { failedBurst: 3, fingerprintChurn: 1000, ipChurn: 1000, spikeMinimum: 1000 },
        activity: { flushEveryMillis: 20 },
        webhooks: { allowInsecure: true, allowPrivate: true, pollMillis: 50 }
      })
    })
    afterAll(async () => {
      await app?.close()
      await receiver?.close()
    })

    const refuse = async (key: string, times: number) => {
      for (let i = 0; i < times; i++) {
        const res = await app.call("POST", "/validate", { body: { license_key: key, fingerprint: "not-activated" }, auth: null })
        expect(res.body.data.valid).toBe(false)
      }
    }
    const announced = (key: string) => receiver.received.filter((r) => r.headers["x-lm-event"] === "anomaly.detected" && r.body.data?.license_key === key)

    it("a burst of refusals is announced to the webhook once, by the background job, and GET still lists it", async () => {
      const hook = expectOk(await app.call("POST", "/webhooks", { body: { name: "anomalies", url: receiver.url, events: ["anomaly.detected"] } }), 201)
      const first = (await createLicense(app, {})).license_key
      await refuse(first, 3)
      const [arrived] = await eventually(() => {
        const found = announced(first)
        expect(found).toHaveLength(1)
        return found
      }, { timeout: 20_000, interval: 50 })
      expect(arrived!.body.data).toEqual({
        license_key: first,
        type: "failed_validation_burst",
        detail: "3 refusals in an hour",
        detected_at: expect.stringMatching(isoTime)
      })
      expect(verifySignature(arrived!, hook.secret)).toBe(true)
      // A second burst on another license, announced by a later round: by then the rounds in between saw the
      // first burst again (more refusals too), and did not announce it again.
      await refuse(first, 2)
      const second = (await createLicense(app, {})).license_key
      await refuse(second, 3)
      await eventually(() => expect(announced(second)).toHaveLength(1), { timeout: 20_000, interval: 50 })
      expect(announced(first)).toHaveLength(1)
      // GET answers the current ones, with the time the job detected them, and announces nothing more.
      const listed = expectOk(await app.call("GET", "/analytics/anomalies")).anomalies
      expect(listed).toContainEqual({ license_key: first, type: "failed_validation_burst", detail: "5 refusals in an hour", detected_at: arrived!.body.data.detected_at })
      await refuse(second, 1)
      const third = (await createLicense(app, {})).license_key
      await refuse(third, 3)
      await eventually(() => expect(announced(third)).toHaveLength(1), { timeout: 20_000, interval: 50 })
      expect(announced(first)).toHaveLength(1)
      expect(announced(second)).toHaveLength(1)
    }, 60_000)
  })
}
