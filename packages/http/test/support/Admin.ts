/**
 * Management actions the client-route tests need (create a license, suspend it, revoke a machine, ...), made
 * over HTTP through the management routes with the admin key. Any answer other than a success fails the test.
 */
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

/** A created license: its key and id. */
export interface CreatedLicense {
  readonly key: string
  readonly id: number
}

/** The management actions on one running app. */
export const admin = (app: TestApp) => {
  const send = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await app.call(method, path, body === undefined ? {} : { body })
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
    return res.body.data
  }
  return {
    /** POST /licenses. */
    createLicense: async (fields: LicenseFields = {}): Promise<CreatedLicense> => {
      const data = await send("POST", "/licenses", fields)
      return { key: data.license_key, id: data.id }
    },
    /** A `pending` key: one generated into a generator's pool and not issued. */
    pendingKey: async (): Promise<string> => {
      const { id } = await send("POST", "/generators", { name: "pool" })
      return (await send("POST", `/generators/${id}/generate`, { count: 1 })).licenses[0].license_key
    },
    /** PUT /licenses/{key}. */
    update: (key: string, fields: LicenseFields) => send("PUT", `/licenses/${key}`, fields),
    suspend: (key: string) => send("POST", `/licenses/${key}/suspend`),
    revoke: (key: string) => send("POST", `/licenses/${key}/revoke`),
    reinstate: (key: string) => send("POST", `/licenses/${key}/reinstate`),
    terminate: (key: string) => send("POST", `/licenses/${key}/terminate`, { confirm: true }),
    /** POST /machines/{id}/revoke. */
    revokeMachine: (id: number) => send("POST", `/machines/${id}/revoke`)
  }
}
