/**
 * Generators and pools (CONTRACT §3, §8) through the services on the memory store: the oldest pending key is
 * drawn first (`source: pool`), an empty pool mints (`source: generator`), and generation is all or nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { Generators, Licenses, Ports } from "@lm/domain"
import { onEngine } from "./engine.js"
import { repeatedByteRandom, T0 } from "./fixtures.js"

const events = Ports.EventOutbox.use((o) => o.readAfter(0, 1000))

describe("drawing from a generator", () => {
  it.effect("takes the oldest pending key from the pool, with the generator's defaults under the body's fields", () =>
    onEngine(Effect.gen(function*() {
      const generators = yield* Generators
      const licenses = yield* Licenses
      const { generator } = yield* generators.create({ name: "Pro", prefix: "PRO", defaultMaxActivations: 3, defaultIsFloating: true })
      const first = yield* generators.generate(generator.id, 2, {})
      yield* TestClock.adjust("1 hour")
      const later = yield* generators.generate(generator.id, 1, {})
      expect(first.map((v) => [v.status, v.license.source, v.license.state])).toEqual([["pending", "generator", "pending"], ["pending", "generator", "pending"]])
      expect((yield* generators.get(generator.id)).poolSize).toBe(3)

      yield* TestClock.adjust("1 hour")
      const drawn = yield* licenses.create({ generatorId: generator.id, maxActivations: 5 })
      expect(drawn.license.key).toBe(first[0]!.license.key)
      expect(drawn).toMatchObject({ status: "inactive", license: { source: "pool", state: "issued", generatorId: generator.id, maxActivations: 5, isFloating: true } })
      expect((yield* generators.get(generator.id)).poolSize).toBe(2)
      expect((yield* licenses.create({ generatorId: generator.id })).license.key).toBe(first[1]!.license.key)
      const last = yield* licenses.create({ generatorId: generator.id })
      expect(last.license).toMatchObject({ key: later[0]!.license.key, maxActivations: 3 })
      expect((yield* generators.get(generator.id)).poolSize).toBe(0)

      // The pool is empty: a key is minted with the generator's format.
      const minted = yield* licenses.create({ generatorId: generator.id })
      expect(minted.license).toMatchObject({ source: "generator", state: "issued", generatorId: generator.id, maxActivations: 3, isFloating: true })
      expect(minted.license.key).toMatch(/^PRO[A-Z0-9]{4}(-[A-Z0-9]{4}){3}$/)
      expect([first, later].flat().map((v) => v.license.key)).not.toContain(minted.license.key)
      expect((yield* events).filter((e) => e.type === "license.created").map((e) => e.data["source"])).toEqual(["pool", "pool", "pool", "generator"])
    })))

  it.effect("a drawn pool key keeps the settings it was generated with; only the body's fields change them", () =>
    onEngine(Effect.gen(function*() {
      const generators = yield* Generators
      const licenses = yield* Licenses
      const { generator } = yield* generators.create({ name: "Seats", defaultMaxActivations: 2 })
      yield* generators.generate(generator.id, 2, { maxActivations: 7, graceDays: 3 })
      const plain = yield* licenses.create({ generatorId: generator.id })
      expect(plain.license).toMatchObject({ source: "pool", maxActivations: 7, graceDays: 3 })
      const overridden = yield* licenses.create({ generatorId: generator.id, maxActivations: 1 })
      expect(overridden.license).toMatchObject({ source: "pool", maxActivations: 1, graceDays: 3 })
    })))

  it.effect("never hands the same pool key to two concurrent draws", () =>
    onEngine(Effect.gen(function*() {
      const generators = yield* Generators
      const licenses = yield* Licenses
      const { generator } = yield* generators.create({ name: "Race" })
      const pool = yield* generators.generate(generator.id, 10, {})
      const drawn = yield* Effect.forEach(Array.from({ length: 25 }), () => licenses.create({ generatorId: generator.id }), { concurrency: "unbounded" })
      const keys = drawn.map((v) => v.license.key)
      expect(new Set(keys).size).toBe(25)
      expect(drawn.filter((v) => v.license.source === "pool").map((v) => v.license.key).sort()).toEqual(pool.map((v) => v.license.key).sort())
      expect(drawn.filter((v) => v.license.source === "generator")).toHaveLength(15)
    })))

  it.effect("refuses a generator id that does not exist, and a key together with a generator", () =>
    onEngine(Effect.gen(function*() {
      const licenses = yield* Licenses
      expect(yield* Effect.flip(licenses.create({ generatorId: 404 }))).toMatchObject({ _tag: "GeneratorNotFound", status: 404 })
      expect(yield* Effect.flip(licenses.create({ generatorId: 1, licenseKey: "AAAA-BBBB-CCCC-DDDD" }))).toMatchObject({ _tag: "InvalidParam", status: 400 })
    })))

  it.effect("mints a default-format key when neither a key nor a generator is given", () =>
    onEngine(Effect.gen(function*() {
      const created = yield* (yield* Licenses).create({})
      expect(created.license.key).toMatch(/^[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{4}(-[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{4}){3}$/)
      expect(created).toMatchObject({ status: "inactive", license: { source: "api", createdAt: T0 } })
    })))
})

describe("generate", () => {
  it.effect("writes nothing when one key of the batch is taken (all or nothing)", () =>
    onEngine(
      Effect.gen(function*() {
        const generators = yield* Generators
        const licenses = yield* Licenses
        // The third key minted will be AAAA-AAAA-AAAA-AAAA, which already exists.
        yield* licenses.create({ licenseKey: "AAAA-AAAA-AAAA-AAAA" })
        const { generator } = yield* generators.create({ name: "Batch" })
        const error = yield* Effect.flip(generators.generate(generator.id, 3, {}))
        expect(error).toMatchObject({ _tag: "LicenseExists", code: "license_exists", status: 409 })
        expect((yield* generators.get(generator.id)).poolSize).toBe(0)
        for (const key of ["BBBB-BBBB-BBBB-BBBB", "CCCC-CCCC-CCCC-CCCC"]) {
          expect(yield* Effect.flip(licenses.get(key))).toMatchObject({ _tag: "LicenseNotFound" })
        }
        expect((yield* events).map((e) => e.type)).toEqual(["license.created"])
      }),
      repeatedByteRandom([1, 2, 0])
    ))

  it.effect("puts count distinct pending keys in the pool, with overrides over the defaults", () =>
    onEngine(Effect.gen(function*() {
      const generators = yield* Generators
      const { generator } = yield* generators.create({ name: "Bulk", chunkLength: 5, defaultMaxActivations: 2 })
      const made = yield* generators.generate(generator.id, 250, { maxActivations: 7 })
      expect(new Set(made.map((v) => v.license.key)).size).toBe(250)
      for (const v of made) {
        expect(v.license).toMatchObject({ state: "pending", source: "generator", generatorId: generator.id, maxActivations: 7 })
        expect(v.license.key).toMatch(/^[A-Z0-9]{5}(-[A-Z0-9]{5}){3}$/)
      }
      expect((yield* generators.get(generator.id)).poolSize).toBe(250)
      expect((yield* events).filter((e) => e.type === "generator.keys_generated").map((e) => e.data)).toEqual([{ generator_id: generator.id, count: 250 }])
    })))

  it.effect("refuses a count outside 1–10000", () =>
    onEngine(Effect.gen(function*() {
      const generators = yield* Generators
      const { generator } = yield* generators.create({ name: "Bulk" })
      for (const count of [0, 10_001, 2.5]) {
        expect(yield* Effect.flip(generators.generate(generator.id, count, {}))).toMatchObject({ _tag: "InvalidParam", params: { count: expect.any(String) } })
      }
      expect(yield* Effect.flip(generators.generate(999, 1, {}))).toMatchObject({ _tag: "GeneratorNotFound" })
    })))

  it.effect("refuses a generator format under 64 bits of randomness", () =>
    onEngine(Effect.gen(function*() {
      const generators = yield* Generators
      expect(yield* Effect.flip(generators.create({ name: "Weak", chunkLength: 3 }))).toMatchObject({ _tag: "InvalidParam", params: { chunk_length: expect.any(String) } })
      expect(yield* Effect.flip(generators.create({ name: "Small", charset: "ABCDEFGHIJKLMNO" }))).toMatchObject({ _tag: "InvalidParam", params: { charset: expect.any(String) } })
      const { generator } = yield* generators.create({ name: "Ok" })
      expect(yield* Effect.flip(generators.update(generator.id, { chunkLength: 3 }))).toMatchObject({ _tag: "InvalidParam" })
    })))

  it.effect("deleting a generator removes its pending keys; issued licenses stay", () =>
    onEngine(Effect.gen(function*() {
      const generators = yield* Generators
      const licenses = yield* Licenses
      const { generator } = yield* generators.create({ name: "Gone" })
      const made = yield* generators.generate(generator.id, 3, {})
      const issued = yield* licenses.create({ generatorId: generator.id })
      expect(yield* generators.delete(generator.id)).toEqual({ id: generator.id, poolKeysDeleted: 2 })
      expect((yield* licenses.get(issued.license.key)).license.source).toBe("pool")
      expect(yield* Effect.flip(licenses.get(made[2]!.license.key))).toMatchObject({ _tag: "LicenseNotFound" })
    })))
})
