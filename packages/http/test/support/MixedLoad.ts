/**
 * Waves of concurrent mixed requests against a running server (in this process or a child `lm serve`): writes
 * (licenses, generators, activations), reads, validations, and requests the client gives up on mid-flight (its
 * socket closed after 0-30 ms). Used to show that a store holds up under it: no answer is ever a 500 or outside
 * the envelope, and every license answered 201 can be read back.
 */
import { expect } from "vitest"
import { adminAuth } from "./App.js"

/** One request's fate: its status and body, or abandoned by the client. */
export type Outcome =
  | { readonly kind: "answer"; readonly what: string; readonly status: number; readonly body: any }
  | { readonly kind: "abandoned"; readonly what: string }

/** Sends one request; `giveUpAfter` aborts it on the client side (the socket is closed) after that many ms. */
export const send = async (
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
        ...(options.auth === false ? {} : { authorization: adminAuth }),
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

/** `waves` waves of 24 concurrent requests (every fourth abandoned); every outcome and the licenses created. */
export const mixedLoad = async (base: string, waves: number) => {
  const outcomes: Array<Outcome> = []
  const created: Array<{ readonly id: number; readonly key: string }> = []
  const first = await send(base, "create", "POST", "/licenses", { max_activations: 1000 })
  expect(first.kind === "answer" && first.status, JSON.stringify(first)).toBe(201)
  const seed = (first as { body: any }).body.data as { id: number; license_key: string }
  for (let wave = 0; wave < waves; wave++) {
    const requests: Array<Promise<Outcome>> = []
    for (let i = 0; i < 24; i++) {
      const n = wave * 100 + i
      const giveUpAfter = i % 4 === 3 ? (n * 7) % 31 : undefined
      const options = giveUpAfter === undefined ? {} : { giveUpAfter }
      const client = { ...options, auth: false }
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
          requests.push(send(base, "validate", "POST", "/validate", { license_key: seed.license_key }, client))
          break
        case 3:
          requests.push(send(base, "generator", "POST", "/generators", { name: `load-${n}` }, options))
          break
        case 4:
          requests.push(send(base, "activate", "POST", "/activate", { license_key: seed.license_key, fingerprint: `m-${n}` }, client))
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

/** The answers that are a 5xx or not in the envelope. */
export const broken = (outcomes: ReadonlyArray<Outcome>) =>
  outcomes.filter((o) =>
    o.kind === "answer" &&
    (o.status >= 500 || typeof o.body !== "object" || o.body === null || typeof o.body.success !== "boolean")
  )

/** Asserts what {@link mixedLoad} did to a server: nothing broken, most answered, every created license readable. */
export const expectIntact = async (base: string, result: Awaited<ReturnType<typeof mixedLoad>>, context: () => string) => {
  expect(broken(result.outcomes), context()).toEqual([])
  expect(result.outcomes.filter((o) => o.kind === "answer").length).toBeGreaterThan(result.outcomes.length / 2)
  for (const license of result.created) {
    const read = await send(base, "check", "GET", `/licenses/${license.key}`)
    expect(read.kind === "answer" && read.status, license.key).toBe(200)
    expect((read as { body: any }).body.data.id).toBe(license.id)
  }
}
