/**
 * Management actions the client-route tests need (create a license, suspend it, revoke a machine, ...). They go
 * through the management routes over HTTP with the admin key; while a route does not exist yet (404
 * `rest_no_route`) the same action goes through the domain's service in the running app instead.
 */
import { Effect } from "effect"
import { Generators, Licenses, Machines } from "@lm/domain"
import type { TestApp } from "./App.js"

/** License fields as the contract writes them. */
export interface LicenseFields {
  readonly product_id?: number | null
  readonly max_activations?: number | null
  readonly overage_strategy?: "deny" | "allow_1_25x" | "allow_1_5x" | "allow_2x"
  readonly is_floating?: boolean
  readonly lease_duration?: number
  readonly require_heartbeat?: boolean
  readonly heartbeat_interval?: number
  readonly expires_at?: string | null
  readonly grace_days?: number
}

const toDomain = (fields: LicenseFields) => ({
  ...(fields.product_id !== undefined ? { productId: fields.product_id } : {}),
  ...(fields.max_activations !== undefined ? { maxActivations: fields.max_activations } : {}),
  ...(fields.overage_strategy !== undefined ? { overageStrategy: fields.overage_strategy } : {}),
  ...(fields.is_floating !== undefined ? { isFloating: fields.is_floating } : {}),
  ...(fields.lease_duration !== undefined ? { leaseDuration: fields.lease_duration } : {}),
  ...(fields.require_heartbeat !== undefined ? { requireHeartbeat: fields.require_heartbeat } : {}),
  ...(fields.heartbeat_interval !== undefined ? { heartbeatInterval: fields.heartbeat_interval } : {}),
  ...(fields.expires_at !== undefined ? { expiresAt: fields.expires_at === null ? null : Date.parse(fields.expires_at) } : {}),
  ...(fields.grace_days !== undefined ? { graceDays: fields.grace_days } : {})
})

const noRoute = (res: { readonly status: number; readonly body: any }) => res.status === 404 && res.body?.code === "rest_no_route"

const expectOk = (what: string, res: { readonly status: number; readonly body: any }) => {
  if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.data
}

/** A created license: its key and id. */
export interface CreatedLicense {
  readonly key: string
  readonly id: number
}

/** The management actions on one running app. */
export const admin = (app: TestApp) => {
  const action = async (
    what: string,
    path: string,
    body: unknown,
    fallback: Effect.Effect<unknown, unknown, any>
  ): Promise<void> => {
    const res = await app.call("POST", path, { body })
    if (noRoute(res)) {
      await app.run(fallback)
      return
    }
    expectOk(what, res)
  }
  return {
    /** POST /licenses. */
    createLicense: async (fields: LicenseFields = {}): Promise<CreatedLicense> => {
      const res = await app.call("POST", "/licenses", { body: fields })
      if (noRoute(res)) {
        const view = await app.run(Effect.flatMap(Licenses, (l) => l.create(toDomain(fields))))
        return { key: view.license.key, id: view.license.id }
      }
      const data = expectOk("create license", res)
      return { key: data.license_key, id: data.id }
    },
    /** A `pending` key: one generated into a generator's pool and not issued. */
    pendingKey: async (): Promise<string> => {
      const created = await app.call("POST", "/generators", { body: { name: "pool" } })
      if (noRoute(created)) {
        return app.run(Effect.gen(function*() {
          const generators = yield* Generators
          const { generator } = yield* generators.create({ name: "pool" })
          const [view] = yield* generators.generate(generator.id, 1, {})
          return view!.license.key
        }))
      }
      const { id } = expectOk("create generator", created)
      const generated = await app.call("POST", `/generators/${id}/generate`, { body: { count: 1 } })
      return expectOk("generate", generated).licenses[0].license_key
    },
    /** PUT /licenses/{key}. */
    update: async (key: string, fields: LicenseFields): Promise<void> => {
      const res = await app.call("PUT", `/licenses/${key}`, { body: fields })
      if (noRoute(res)) {
        await app.run(Effect.flatMap(Licenses, (l) => l.update(key, toDomain(fields))))
        return
      }
      expectOk("update license", res)
    },
    suspend: (key: string) =>
      action("suspend", `/licenses/${key}/suspend`, {}, Effect.flatMap(Licenses, (l) => l.suspend(key))),
    revoke: (key: string) =>
      action("revoke", `/licenses/${key}/revoke`, {}, Effect.flatMap(Licenses, (l) => l.revoke(key))),
    reinstate: (key: string) =>
      action("reinstate", `/licenses/${key}/reinstate`, {}, Effect.flatMap(Licenses, (l) => l.reinstate(key))),
    terminate: (key: string) =>
      action(
        "terminate",
        `/licenses/${key}/terminate`,
        { confirm: true },
        Effect.flatMap(Licenses, (l) => l.terminate(key, true))
      ),
    /** POST /machines/{id}/revoke. */
    revokeMachine: (id: number) =>
      action("revoke machine", `/machines/${id}/revoke`, {}, Effect.flatMap(Machines, (m) => m.revoke(id)))
  }
}
