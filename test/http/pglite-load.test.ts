/**
 * The PGlite store (the embedded default) under concurrent load: `lm serve` on PGlite, once on an empty data folder
 * and once on a copy of the migrated template (what the console tests start on), two servers side by side, each
 * sent waves of concurrent mixed requests: writes (licenses, generators, activations), reads, validations, requests
 * the client gives up on mid-flight (socket closed) and requests cut by a client-side timeout. No answer is ever a
 * 500 or outside the envelope, and afterwards every write that was answered 201 is there.
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { PgliteTemplate } from "@lm/storage-pg"
import { afterAll, expect, it } from "vitest"
import { adminKey } from "../../packages/http/test/support/App.js"
import { basic } from "../../packages/http/test/support/Management.js"
import { type ServerProcess, spawnServer, waitForOutput } from "./support/Child.js"

const work = mkdtempSync(join(tmpdir(), "lm-pglite-load-"))
const servers: Array<ServerProcess> = []
afterAll(() => {
  for (const server of servers) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
  rmSync(work, { recursive: true, force: true })
})

const admin = basic(adminKey.consumerKey, adminKey.consumerSecret)

const start = async (name: string, migrated: boolean): Promise<{ base: string; server: ServerProcess }> => {
  const dataDir = join(work, name)
  if (migrated) cpSync(await Effect.runPromise(PgliteTemplate.migratedDataDir), dataDir, { recursive: true })
  const server = spawnServer({
    LM_DATA_DIR: dataDir,
    PORT: "0",
    HOST: "127.0.0.1",
    LM_SWEEP_INTERVAL: "0",
    LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
    LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret
  })
  servers.push(server)
  const [, base] = await waitForOutput(server, /Listening on (http:\/\/\S+)/, 120_000)
  return { base: base!, server }
}

/** One answer: its status and body, or how the client gave up on it. */
type Outcome =
  | { readonly kind: "answer"; readonly what: string; readonly status: number; readonly body: any }
  | { readonly kind: "abandoned"; readonly what: string }

/** Sends one request; `giveUpAfter` aborts it on the client side (the socket is closed) after that many ms. */
const send = async (
  base: string,
  what: string,
  method: string,
  path: string,
  body?: unknown,
  options: { readonly auth?: boolean; readonly giveUpAfter?: number } = {}
): Promise<Outcome> => {
  const controller = new AbortController()
  const timer = options.giveUpAfter === undefined ? undefined : setTimeout(() => controller.abort(), options.giveUpAfter)
  try {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(options.auth === false ? {} : { authorization: admin }),
        ...(body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: controller.signal
    })
    const text = await response.text()
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = text
    }
    return { kind: "answer", what, status: response.status, body: parsed }
  } catch (error) {
    if (controller.signal.aborted) return { kind: "abandoned", what }
    throw error
  } finally {
    clearTimeout(timer)
  }
}

/** Waves of concurrent mixed requests against one server; returns every outcome and the licenses created. */
const load = async (base: string, waves: number) => {
  const outcomes: Array<Outcome> = []
  const created: Array<{ id: number; key: string }> = []
  const first = await send(base, "create", "POST", "/licenses", { max_activations: 1000 })
  expect(first.kind === "answer" && first.status, JSON.stringify(first)).toBe(201)
  const seed = (first as any).body.data as { id: number; license_key: string }
  for (let wave = 0; wave < waves; wave++) {
    const requests: Array<Promise<Outcome>> = []
    for (let i = 0; i < 24; i++) {
      const n = wave * 100 + i
      // Every fourth request is abandoned by the client after 0-30 ms, mid-flight.
      const giveUpAfter = i % 4 === 3 ? (n * 7) % 31 : undefined
      const options = giveUpAfter === undefined ? {} : { giveUpAfter }
      switch (i % 8) {
        case 0:
          requests.push(
            send(base, "create", "POST", "/licenses", { max_activations: 3 }, options).then((outcome) => {
              if (outcome.kind === "answer" && outcome.status === 201) {
                created.push({ id: outcome.body.data.id, key: outcome.body.data.license_key })
              }
              return outcome
            })
          )
          break
        case 1:
          requests.push(send(base, "read", "GET", `/licenses/${seed.license_key}`, undefined, options))
          break
        case 2:
          requests.push(send(base, "validate", "POST", "/validate", { license_key: seed.license_key }, { ...options, auth: false }))
          break
        case 3:
          requests.push(send(base, "generator", "POST", "/generators", { name: `load-${n}` }, options))
          break
        case 4:
          requests.push(
            send(base, "activate", "POST", "/activate", { license_key: seed.license_key, fingerprint: `m-${n}` }, {
              ...options,
              auth: false
            })
          )
          break
        case 5:
          requests.push(send(base, "list", "GET", "/licenses?per_page=50", undefined, options))
          break
        case 6:
          requests.push(send(base, "unknown", "GET", `/licenses/NOPE-${n}`, undefined, options))
          break
        default:
          requests.push(send(base, "generators", "GET", "/generators", undefined, options))
      }
    }
    outcomes.push(...(await Promise.all(requests)))
  }
  return { outcomes, created }
}

const broken = (outcomes: ReadonlyArray<Outcome>) =>
  outcomes.filter((o) =>
    o.kind === "answer" &&
    (o.status >= 500 || typeof o.body !== "object" || o.body === null || typeof o.body.success !== "boolean")
  )

it("two PGlite servers (empty folder, migrated copy) answer waves of concurrent, abandoned requests: no 500, data intact", async () => {
  const [fresh, copied] = await Promise.all([start("empty", false), start("migrated", true)])
  const results = await Promise.all([load(fresh.base, 30), load(copied.base, 30)])
  for (const [index, { base, server }] of [fresh, copied].entries()) {
    const { outcomes, created } = results[index]!
    expect(broken(outcomes), server.output().slice(-4000)).toEqual([])
    expect(outcomes.filter((o) => o.kind === "answer").length).toBeGreaterThan(outcomes.length / 2)
    // Every license answered 201 is there, with its key.
    for (const license of created) {
      const read = await send(base, "check", "GET", `/licenses/${license.key}`)
      expect(read.kind === "answer" && read.status, license.key).toBe(200)
      expect((read as any).body.data.id).toBe(license.id)
    }
    expect(server.output()).not.toMatch(/does not exist|current transaction is aborted/)
  }
}, 300_000)
