/**
 * Key generators over real HTTP (CONTRACT §8, §14), on the memory store and on PGlite: CRUD, the key format
 * rules (64 bits at least), bulk generation into the pool, drawing from it, and every refusal.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sharedApp, type TestApp } from "./support/App.js"
import { createLicense, expectError, expectInvalid, expectList, expectOk, isoTime, unique } from "./support/Management.js"

const DEFAULT_CHARSET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

for (const store of ["memory", "pglite"] as const) {
  describe(`generator routes on ${store}`, () => {
    let app: TestApp
    beforeAll(async () => {
      app = await sharedApp(store)
    })
    afterAll(() => app?.close())

    const createGenerator = async (body: Record<string, unknown>) =>
      expectOk(await app.call("POST", "/generators", { body }), 201)
    const generate = async (id: number, body: Record<string, unknown>) => {
      const res = await app.call("POST", `/generators/${id}/generate`, { body })
      return expectOk(res, 201, { total: res.body?.data?.licenses?.length ?? -1 }).licenses as Array<any>
    }

    describe("POST /generators", () => {
      it("creates with the defaults: 201, pool_size 0", async () => {
        const data = await createGenerator({ name: "  Default  " })
        expect(data).toEqual({
          id: expect.any(Number),
          name: "Default",
          charset: DEFAULT_CHARSET,
          chunk_length: 4,
          prefix: "",
          product_id: null,
          default_max_activations: null,
          default_valid_days: null,
          default_overage_strategy: null,
          default_is_floating: null,
          pool_size: 0,
          created_at: expect.stringMatching(isoTime),
          updated_at: expect.stringMatching(isoTime)
        })
      })

      it("takes every field", async () => {
        const data = await createGenerator({
          name: "Pro",
          charset: "0123456789ABCDEF",
          chunk_length: 6,
          prefix: "PRO",
          product_id: 12,
          default_max_activations: 3,
          default_valid_days: 365,
          default_overage_strategy: "allow_1_25x",
          default_is_floating: true
        })
        expect(data).toMatchObject({
          name: "Pro",
          charset: "0123456789ABCDEF",
          chunk_length: 6,
          prefix: "PRO",
          product_id: 12,
          default_max_activations: 3,
          default_valid_days: 365,
          default_overage_strategy: "allow_1_25x",
          default_is_floating: true
        })
      })

      it("accepts exactly 64 bits of randomness and refuses less", async () => {
        // 16 distinct characters give 4 bits each: 4 groups × 4 = 64 bits; 4 groups × 3 = 48 bits.
        expect((await createGenerator({ name: "64", charset: "ABCDEFGHJKLMNPQR", chunk_length: 4 })).chunk_length).toBe(4)
        const params = expectInvalid(
          await app.call("POST", "/generators", { body: { name: "48", charset: "ABCDEFGHJKLMNPQR", chunk_length: 3 } }),
          "chunk_length"
        )
        expect(params.chunk_length).toMatch(/64/)
        // Duplicates do not add randomness.
        expectInvalid(
          await app.call("POST", "/generators", { body: { name: "dup", charset: "ABCDEFGHJKLMNPQRABCD", chunk_length: 3 } }),
          "chunk_length"
        )
      })

      it("refuses a bad name, charset, chunk length or prefix", async () => {
        const bad = async (body: Record<string, unknown>, field: string) =>
          expectInvalid(await app.call("POST", "/generators", { body: { name: "g", ...body } }), field)
        expectInvalid(await app.call("POST", "/generators", { body: {} }), "name")
        await bad({ name: "   " }, "name")
        await bad({ name: null }, "name")
        await bad({ name: "x".repeat(256) }, "name")
        await bad({ charset: "abcdefghjklmnpqrstuvwxyz" }, "charset")
        await bad({ charset: "ABCDEFGHJKLMNPQ" }, "charset")
        await bad({ charset: "ABCD-EFGH-JKLM-NPQR" }, "charset")
        await bad({ chunk_length: 1 }, "chunk_length")
        await bad({ chunk_length: 17 }, "chunk_length")
        await bad({ chunk_length: 4.5 }, "chunk_length")
        await bad({ prefix: "TOOLONG12" }, "prefix")
        await bad({ prefix: "ab" }, "prefix")
        await bad({ default_overage_strategy: "allow_9x" }, "default_overage_strategy")
        await bad({ default_valid_days: 0 }, "default_valid_days")
        await bad({ product_id: -3 }, "product_id")
      })

      it("rejects unknown and read-only fields", async () => {
        expectInvalid(await app.call("POST", "/generators", { body: { name: "g", pool_size: 5, colour: "x" } }), "pool_size", "colour")
      })
    })

    describe("GET /generators and GET /generators/{id}", () => {
      it("gets one with its pool size, and lists them oldest first with paging", async () => {
        const generator = await createGenerator({ name: "get" })
        await generate(generator.id, { count: 3 })
        expect(expectOk(await app.call("GET", `/generators/${generator.id}`))).toMatchObject({ id: generator.id, pool_size: 3 })

        const total: number = (await app.call("GET", "/generators")).body.meta.total
        expect(total).toBeGreaterThanOrEqual(1)
        const all = expectList(await app.call("GET", "/generators?per_page=100"), "generators", { total, per_page: 100 })
        expect(all.map((g: any) => g.id)).toEqual([...all.map((g: any) => g.id)].sort((a, b) => a - b))
        const last = expectList(await app.call("GET", `/generators?per_page=1&page=${total}`), "generators", { total, page: total, per_page: 1 })
        expect(last.map((g: any) => g.id)).toEqual([all[total - 1].id])
        expect(all.find((g: any) => g.id === generator.id)?.pool_size).toBe(3)
        expectInvalid(await app.call("GET", "/generators?page=0"), "page")
      })

      it("refuses a bad id (400) and an unknown one (404 generator_not_found)", async () => {
        for (const id of ["0", "x", "2.0"]) expectInvalid(await app.call("GET", `/generators/${id}`), "id")
        expectError(await app.call("GET", "/generators/987654321"), 404, "generator_not_found")
      })
    })

    describe("PUT /generators/{id}", () => {
      it("changes only the fields sent", async () => {
        const generator = await createGenerator({ name: "put", prefix: "AA", default_max_activations: 2 })
        const data = expectOk(await app.call("PUT", `/generators/${generator.id}`, { body: { name: "renamed", chunk_length: 5 } }))
        expect(data).toMatchObject({ id: generator.id, name: "renamed", chunk_length: 5, prefix: "AA", default_max_activations: 2 })
        expect(expectOk(await app.call("GET", `/generators/${generator.id}`))).toMatchObject({ name: "renamed", chunk_length: 5 })
      })

      it("clears with null: defaults to null, the key format back to its defaults", async () => {
        const generator = await createGenerator({
          name: "clear",
          charset: "0123456789ABCDEF",
          chunk_length: 8,
          prefix: "ZZ",
          product_id: 1,
          default_max_activations: 2,
          default_valid_days: 3,
          default_overage_strategy: "allow_2x",
          default_is_floating: false
        })
        const body = Object.fromEntries(
          ["charset", "chunk_length", "prefix", "product_id", "default_max_activations", "default_valid_days",
            "default_overage_strategy", "default_is_floating"].map((k) => [k, null])
        )
        expect(expectOk(await app.call("PUT", `/generators/${generator.id}`, { body }))).toMatchObject({
          name: "clear",
          charset: DEFAULT_CHARSET,
          chunk_length: 4,
          prefix: "",
          product_id: null,
          default_max_activations: null,
          default_valid_days: null,
          default_overage_strategy: null,
          default_is_floating: null
        })
      })

      it("refuses pool_size, a null name, a weak format, and unknown generators", async () => {
        const generator = await createGenerator({ name: "strict" })
        expectInvalid(await app.call("PUT", `/generators/${generator.id}`, { body: { pool_size: 0 } }), "pool_size")
        expectInvalid(await app.call("PUT", `/generators/${generator.id}`, { body: { name: null } }), "name")
        expectInvalid(await app.call("PUT", `/generators/${generator.id}`, { body: { chunk_length: 2 } }), "chunk_length")
        expect(expectOk(await app.call("GET", `/generators/${generator.id}`)).chunk_length).toBe(4)
        expectError(await app.call("PUT", "/generators/987654321", { body: { name: "x" } }), 404, "generator_not_found")
      })
    })

    describe("POST /generators/{id}/generate", () => {
      it("makes count unique pending keys in the generator's format: 201 {licenses} with meta.total", async () => {
        const generator = await createGenerator({ name: "gen", prefix: "AB", chunk_length: 5, default_max_activations: 2, product_id: 9 })
        const licenses = await generate(generator.id, { count: 25 })
        expect(licenses).toHaveLength(25)
        expect(new Set(licenses.map((l) => l.license_key)).size).toBe(25)
        for (const license of licenses) {
          expect(license.license_key).toMatch(/^AB[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}$/)
          expect([...license.license_key.replaceAll("-", "").slice(2)].every((c) => DEFAULT_CHARSET.includes(c))).toBe(true)
          expect(license).toMatchObject({ status: "pending", source: "generator", generator_id: generator.id, max_activations: 2, product_id: 9 })
        }
        expect(expectOk(await app.call("GET", `/generators/${generator.id}`)).pool_size).toBe(25)
      })

      it("applies the body's license fields over the generator's defaults", async () => {
        const generator = await createGenerator({ name: "over", default_max_activations: 2, default_is_floating: true })
        const [license] = await generate(generator.id, {
          count: 1,
          max_activations: 7,
          is_floating: null,
          expires_at: "2040-01-01T01:00:00+01:00",
          meta: { batch: 1 }
        })
        expect(license).toMatchObject({ max_activations: 7, is_floating: false, expires_at: "2040-01-01T00:00:00.000Z", meta: { batch: 1 } })
      })

      it("makes up to 10000 keys at once", async () => {
        const generator = await createGenerator({ name: "bulk" })
        expect(await generate(generator.id, { count: 10_000 })).toHaveLength(10_000)
        expect(expectOk(await app.call("GET", `/generators/${generator.id}`)).pool_size).toBe(10_000)
      })

      it("refuses a count outside 1-10000, bad or unknown fields, and unknown generators", async () => {
        const generator = await createGenerator({ name: "count" })
        const path = `/generators/${generator.id}/generate`
        for (const count of [0, 10_001, 2.5, "5", null]) {
          expectInvalid(await app.call("POST", path, { body: { count } }), "count")
        }
        expectInvalid(await app.call("POST", path, { body: {} }), "count")
        expectInvalid(await app.call("POST", path, { body: { count: 1, lease_duration: 0, prefix: "X" } }), "lease_duration", "prefix")
        expect(expectOk(await app.call("GET", `/generators/${generator.id}`)).pool_size).toBe(0)
        expectError(await app.call("POST", "/generators/987654321/generate", { body: { count: 1 } }), 404, "generator_not_found")
      })

      it("feeds POST /licenses with generator_id: the oldest pending key first, then minted keys", async () => {
        const generator = await createGenerator({ name: "draw" })
        const pool = await generate(generator.id, { count: 2 })
        const first = await createLicense(app, { generator_id: generator.id })
        const second = await createLicense(app, { generator_id: generator.id })
        expect([first.license_key, second.license_key]).toEqual(pool.map((l) => l.license_key))
        expect(first).toMatchObject({ id: pool[0].id, source: "pool", status: "inactive" })
        expect(expectOk(await app.call("GET", `/generators/${generator.id}`)).pool_size).toBe(0)
        const minted = await createLicense(app, { generator_id: generator.id })
        expect(minted).toMatchObject({ source: "generator", status: "inactive" })
      })

      it("issues a pool key with the settings it was generated with, under the body's fields", async () => {
        const generator = await createGenerator({ name: "keep", default_max_activations: 3, default_is_floating: true })
        await generate(generator.id, { count: 1, max_activations: null, grace_days: 4 })
        const drawn = await createLicense(app, { generator_id: generator.id, user_id: 77 })
        expect(drawn).toMatchObject({ source: "pool", max_activations: null, is_floating: true, grace_days: 4, user_id: 77 })
      })
    })

    describe("DELETE /generators/{id}", () => {
      it("deletes the generator and its pending keys; issued licenses stay", async () => {
        const product = unique()
        const generator = await createGenerator({ name: "gone", product_id: product })
        const pool = await generate(generator.id, { count: 3 })
        const issued = await createLicense(app, { generator_id: generator.id })
        const data = expectOk(await app.call("DELETE", `/generators/${generator.id}`))
        expect(data).toEqual({ deleted: true, id: generator.id, pool_keys_deleted: 2 })
        expectError(await app.call("GET", `/generators/${generator.id}`), 404, "generator_not_found")
        expect(expectOk(await app.call("GET", `/licenses/${issued.license_key}`))).toMatchObject({ generator_id: generator.id, source: "pool" })
        expectError(await app.call("GET", `/licenses/${pool[2].license_key}`), 404, "license_not_found")
        expectList(await app.call("GET", `/licenses?product_id=${product}`), "licenses", { total: 1 })
        expectError(await app.call("DELETE", `/generators/${generator.id}`), 404, "generator_not_found")
      })

      it("refuses body fields and bad ids", async () => {
        const generator = await createGenerator({ name: "keep" })
        expectInvalid(await app.call("DELETE", `/generators/${generator.id}`, { body: { cascade: true } }), "cascade")
        expectOk(await app.call("GET", `/generators/${generator.id}`))
        expectInvalid(await app.call("DELETE", "/generators/-4"), "id")
      })
    })
  })
}
