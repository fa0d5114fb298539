/**
 * The background sweep of the bundled server (CONTRACT §7): with LM_SWEEP_INTERVAL set, a machine whose floating
 * lease ran out is deactivated with reason `lease_expired` without anyone asking, and its seat is free.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { admin } from "./support/Admin.js"
import { startApp, type TestApp } from "./support/App.js"
import { eventually } from "../../../test/support/eventually.js"

for (const store of ["memory", "pglite"] as const) {
  describe(`the background sweep on ${store}`, () => {
    let app: TestApp
    beforeAll(async () => {
      app = await startApp(store, { sweepIntervalSeconds: 1 })
    })
    afterAll(() => app?.close())

    it("deactivates a machine whose lease ran out, with reason lease_expired", async () => {
      const license = await admin(app).createLicense({ max_activations: 1, is_floating: true, lease_duration: 1 })
      const activated = await app.call("POST", "/activate", { body: { license_key: license.key, fingerprint: "sweep-me" }, auth: null })
      expect(activated.status).toBe(201)
      const id = activated.body.data.id
      // The lease runs out after 1 s and the sweep runs every second: polled, with a bound for a loaded machine.
      const machine = await eventually(async () => {
        const machine = (await app.call("GET", `/machines/${id}`)).body.data
        expect(machine.status).not.toBe("active")
        return machine
      }, { timeout: 20_000, interval: 100 })
      expect(machine).toMatchObject({ status: "inactive", deactivation_reason: "lease_expired" })
      const again = await app.call("POST", "/activate", { body: { license_key: license.key, fingerprint: "another" }, auth: null })
      expect(again.status).toBe(201)
    })
  })
}
