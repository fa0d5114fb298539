/**
 * The OpenAPI document as served (CONTRACT §13, issue 27): `servers` from the request's origin, no safe-integer
 * pseudo-bounds, path ids as integers, a description on every operation, webhook event names as an enum, the
 * deliveries in the 3.1 `webhooks` section; `@redocly/cli lint` finds no error in it; and a client generated from it
 * by `openapi-typescript` type-checks a small script that validates a key (and refuses one that misspells a field).
 */
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { get } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { Model } from "@lm/domain"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startApp, type TestApp } from "./support/App.js"

const run = promisify(execFile)
const bin = (name: string) => fileURLToPath(new URL(`../../../node_modules/.bin/${name}`, import.meta.url))

/** Runs a command; its exit code and output (a failure is an answer, not a throw). */
const exec = async (file: string, args: ReadonlyArray<string>, cwd: string) => {
  try {
    const { stdout, stderr } = await run(file, args, {
      cwd,
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" }
    })
    return { code: 0, output: `${stdout}${stderr}` }
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string }
    return { code: failed.code ?? 1, output: `${failed.stdout ?? ""}${failed.stderr ?? ""}` }
  }
}

const operationsOf = (document: any) =>
  Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation }))
  )

describe("the OpenAPI document", () => {
  let app: TestApp
  let document: any
  let dir: string
  beforeAll(async () => {
    app = await startApp("memory")
    document = await (await fetch(`${app.apiBase}/openapi.json`)).json()
    dir = mkdtempSync(join(tmpdir(), "lm-openapi-"))
    writeFileSync(join(dir, "openapi.json"), JSON.stringify(document))
  })
  afterAll(async () => {
    await app?.close()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("names the origin the request reached as its server; its paths hold the rest root", async () => {
    expect(document.servers).toEqual([{ url: app.origin, description: "This server." }])
    expect(Object.keys(document.paths)).toContain("/api/lm/v1/validate")
    // Another Host (fetch cannot send one): node:http.
    const proxied = await new Promise<any>((resolve, reject) => {
      const url = new URL(`${app.apiBase}/openapi.json`)
      get({ host: url.hostname, port: url.port, path: url.pathname, headers: { host: "licensing.example.com" } }, (response) => {
        let text = ""
        response.setEncoding("utf8").on("data", (chunk) => (text += chunk)).on("end", () => resolve(JSON.parse(text)))
      }).on("error", reject)
    })
    expect(proxied.servers[0].url).toBe("http://licensing.example.com")
  })

  it("has integers with the contract's bounds only, path ids as integers, and a description on every operation", () => {
    const text = JSON.stringify(document)
    expect(text).not.toContain(String(Number.MAX_SAFE_INTEGER))
    const create = document.paths["/api/lm/v1/licenses"].post.requestBody.content["application/json"].schema
    expect(create.properties.lease_duration.anyOf[0]).toMatchObject({ type: "integer", minimum: 1, maximum: 31_536_000 })
    const ids = operationsOf(document).flatMap(({ operation }) =>
      (operation.parameters ?? []).filter((p: any) => p.in === "path" && (p.name === "id" || p.name.endsWith("_id")))
    )
    expect(ids.length).toBeGreaterThan(10)
    for (const id of ids) expect(id.schema).toMatchObject({ type: "integer", minimum: 1 })
    for (const { path, method, operation } of operationsOf(document)) {
      expect(operation.description, `${method} ${path}`).toMatch(/\S/)
    }
    const headers = (path: string) => document.paths[path].post.parameters.filter((p: any) => p.in === "header").map((p: any) => p.name)
    expect(headers("/api/lm/v1/licenses")).toEqual(["Idempotency-Key"])
    expect(headers("/api/lm/v1/validate")).toEqual([])
  })

  it("lists webhook event names as an enum and describes each delivery in the webhooks section", () => {
    const body = document.paths["/api/lm/v1/webhooks"].post.requestBody.content["application/json"].schema
    expect(body.properties.events.items.enum).toEqual([...Model.webhookEventTypes, "*"])
    expect(Object.keys(document.webhooks).sort()).toEqual([...Model.webhookEventTypes].sort())
    const delivery = document.webhooks["license.revoked"].post
    expect(delivery.parameters.map((p: any) => p.name)).toEqual(["X-LM-Event", "X-LM-Delivery", "X-LM-Signature"])
    const ref = delivery.requestBody.content["application/json"].schema.$ref.split("/").at(-1)
    expect(document.components.schemas[ref].properties.type).toEqual({ type: "string", const: "license.revoked" })
  })

  it("passes @redocly/cli lint with no error", async () => {
    const lint = await exec(bin("redocly"), ["lint", "openapi.json"], dir)
    expect(lint.output).toContain("Your API description is valid")
    expect(lint.code, lint.output).toBe(0)
  }, 60_000)

  it("generates with openapi-typescript a client that type-checks a script validating a key", async () => {
    const generated = await exec(bin("openapi-typescript"), ["openapi.json", "--output", "schema.d.ts"], dir)
    expect(generated.code, generated.output).toBe(0)
    const script = (field: string) => `import type { paths } from "./schema.js"
type Validate = paths["/api/lm/v1/validate"]["post"]
type Body = Validate["requestBody"]["content"]["application/json"]
type Answer = Validate["responses"]["200"]["content"]["application/json"]
/** Whether the server says the key is valid on this device. */
export const validateKey = async (server: string, licenseKey: string): Promise<boolean> => {
  const body: Body = { license_key: licenseKey, fingerprint: "device-1" }
  const response = await fetch(\`\${server}/api/lm/v1/validate\`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const answer = (await response.json()) as Answer
  return answer.data.${field} && answer.data.code === "valid"
}
`
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, module: "nodenext", moduleResolution: "nodenext", target: "es2023", lib: ["es2023", "dom"], types: [], skipLibCheck: false },
      files: ["validate.ts"]
    }))
    writeFileSync(join(dir, "validate.ts"), script("valid"))
    const checked = await exec(bin("tsc"), ["-p", "tsconfig.json"], dir)
    expect(checked.code, checked.output).toBe(0)
    // The types are the API's: a misspelt field does not type-check.
    writeFileSync(join(dir, "validate.ts"), script("vaild"))
    const misspelt = await exec(bin("tsc"), ["-p", "tsconfig.json"], dir)
    expect(misspelt.code).not.toBe(0)
    expect(misspelt.output).toContain("vaild")
  }, 60_000)
})
