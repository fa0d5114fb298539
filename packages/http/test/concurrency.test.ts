/**
 * The seat check and the insert are atomic (CONTRACT §4): 200 concurrent activations over HTTP of distinct
 * fingerprints on a license with ceiling 5 leave exactly 5 active machines, and the other 195 are refused with
 * 422 `machine_limit_exceeded`. On the memory store and on PGlite.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { admin } from "./support/Admin.js"
import { sharedApp, type TestApp } from "./support/App.js"

const attempts = 200
const ceiling = 5

for (const store of ["memory", "pglite"] as const) {
  describe(`concurrent activations on ${store}`, () => {
    let app: TestApp

    beforeAll(async () => {
      app = await sharedApp(store)
    })
    afterAll(() => app?.close())

    it(`gives ${ceiling} of ${attempts} simultaneous activations a seat and refuses the rest`, async () => {
      const { key } = await admin(app).createLicense({ max_activations: ceiling })
      const results = await Promise.all(
        Array.from({ length: attempts }, (_, i) =>
          app.call("POST", "/activate", { body: { license_key: key, fingerprint: `racer-${i}` }, auth: null }))
      )
      const created = results.filter((r) => r.status === 201)
      const refused = results.filter((r) => r.status === 422)
      expect(results.filter((r) => r.status !== 201 && r.status !== 422).map((r) => r.body)).toEqual([])
      expect(created).toHaveLength(ceiling)
      expect(refused).toHaveLength(attempts - ceiling)
      for (const r of refused) {
        expect(r.body).toMatchObject({
          success: false,
          code: "machine_limit_exceeded",
          data: { status: 422, max_activations: ceiling, activation_count: ceiling, ceiling }
        })
      }
      expect(new Set(created.map((r) => r.body.data.id)).size).toBe(ceiling)

      // The store agrees: five machines hold a seat, each a different winner.
      const view = await app.call("POST", "/validate", { body: { license_key: key }, auth: null })
      expect(view.body.data.license).toMatchObject({ status: "active", activation_count: ceiling })
      for (const r of created) {
        const check = await app.call("POST", "/validate", {
          body: { license_key: key, fingerprint: r.body.data.fingerprint },
          auth: null
        })
        expect(check.body.data).toMatchObject({ valid: true, machine: { id: r.body.data.id } })
      }
    })
  })
}
