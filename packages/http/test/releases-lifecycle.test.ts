/**
 * A release's life after publishing (CONTRACT §9, issue 27), on the memory store, PGlite and (when DATABASE_URL
 * names a server) PostgreSQL, with the folder artifact store and the S3-compatible one (s3rver): `GET
 * /releases/{id}`; `DELETE /releases/{id}` takes it out of lists and update checks, removes its uploaded artifact,
 * and turns a download token issued for it into 404 `release_not_found`. Also: the multipart form's fields may come
 * after the `file` part; an unknown `channel` is 400 naming the allowed ones; an update check with nothing newer
 * answers `latest_version` (the newest the channel sees) with `release`, `download_url` and `token_expires_at` null.
 */
import { mkdtempSync, readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3"
import { Layer } from "effect"
import { MemoryStore } from "@lm/storage-memory"
import { layerOnClient, PgliteTemplate } from "@lm/storage-pg"
import S3rver from "s3rver"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshPostgresStore } from "../../../test/storage-contract/pg-support.js"
import { admin } from "./support/Admin.js"
import { adminAuth, startApp, type TestApp, type TestStore } from "./support/App.js"
import { withMultipartUploadListing } from "./support/S3rverUploads.js"
import { serviceUrl } from "../../../test/support/services.js"

const ALLOWED = "must be one of stable, rc, beta, alpha, dev"

/** `POST /releases` as multipart: the parts in the order given (`file` names the artifact's place). */
const upload = (app: TestApp, parts: ReadonlyArray<readonly [string, string | Uint8Array]>) => {
  const form = new FormData()
  for (const [name, value] of parts) {
    if (typeof value === "string") form.append(name, value)
    else form.append(name, new Blob([value], { type: "application/zip" }), "app.zip")
  }
  return fetch(`${app.apiBase}/releases`, { method: "POST", body: form, headers: { authorization: adminAuth } })
    .then(async (response) => ({ status: response.status, body: (await response.json()) as any }))
}

/** Publishes a release, deletes it, and checks everything that must be gone; `artifactsLeft` counts the store's. */
const publishAndDelete = async (app: TestApp, productId: number, artifactsLeft: () => Promise<number>) => {
  const before = await artifactsLeft()
  const bytes = new Uint8Array(4096).fill(7)
  const created = await upload(app, [["product_id", String(productId)], ["version", "1.0.0"], ["file", bytes]])
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  const release = created.body.data
  expect(await artifactsLeft()).toBe(before + 1)

  const got = await app.call("GET", `/releases/${release.id}`)
  expect([got.status, got.body.data]).toEqual([200, release])
  const license = await admin(app).createLicense({ product_id: productId })
  const check = await app.call("GET", `/updates/check?license_key=${license.key}&version=0.9.0`, { auth: null })
  expect(check.body.data.release.id).toBe(release.id)
  const url: string = check.body.data.download_url

  const deleted = await app.call("DELETE", `/releases/${release.id}`)
  expect([deleted.status, deleted.body.data]).toEqual([200, { deleted: true, id: release.id }])
  expect(await artifactsLeft()).toBe(before)
  for (const [method, route] of [["GET", `/releases/${release.id}`], ["DELETE", `/releases/${release.id}`]] as const) {
    const gone = await app.call(method, route)
    expect([gone.status, gone.body.code], `${method} ${route}`).toEqual([404, "release_not_found"])
  }
  const listed = await app.call("GET", `/releases?product_id=${productId}`)
  expect([listed.body.data.releases, listed.body.meta.total]).toEqual([[], 0])
  const after = await app.call("GET", `/updates/check?license_key=${license.key}&version=0.9.0`, { auth: null })
  expect(after.body.data).toEqual({
    update_available: false,
    current_version: "0.9.0",
    latest_version: null,
    release: null,
    download_url: null,
    token_expires_at: null
  })
  const download = await fetch(url)
  expect([download.status, ((await download.json()) as any).code]).toEqual([404, "release_not_found"])
}

const postgresUrl = serviceUrl("DATABASE_URL")
const stores: Array<TestStore | "postgres"> = ["memory", "pglite", ...(postgresUrl === "" ? [] : ["postgres" as const])]

for (const store of stores) {
  describe(`a release's life (${store}, artifacts in a folder)`, () => {
    let app: TestApp
    let artifactDir: string
    beforeAll(async () => {
      artifactDir = path.join(mkdtempSync(path.join(tmpdir(), "lm-release-life-")), "artifacts")
      app = await startApp(store === "postgres" ? "memory" : store, {
        artifacts: { dir: artifactDir },
        storeLayer: store === "postgres"
          ? freshPostgresStore(postgresUrl)
          : store === "pglite"
          ? layerOnClient.pipe(Layer.provide(PgliteTemplate.layerTemporaryMigrated))
          : MemoryStore.layer
      })
    }, 120_000)
    afterAll(() => app?.close())

    it("GET and DELETE /releases/{id}: gone from lists, update checks and the folder; its download token 404", async () => {
      await publishAndDelete(app, 41, async () => readdirSync(artifactDir).length)
      const unknown = await app.call("GET", "/releases/987654")
      expect([unknown.status, unknown.body.code]).toEqual([404, "release_not_found"])
    })

    it("takes the form's fields after the file part, and refuses bad ones then without keeping the file", async () => {
      const bytes = new Uint8Array(70_000).fill(3)
      const before = readdirSync(artifactDir).length
      const created = await upload(app, [["file", bytes], ["product_id", "42"], ["version", "2.0.0"], ["changelog", "After the file"]])
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      expect(created.body.data).toMatchObject({ product_id: 42, version: "2.0.0", changelog: "After the file", size: bytes.length })
      // Some fields before the file, the rest after it.
      const mixed = await upload(app, [["product_id", "42"], ["file", bytes], ["version", "2.1.0"], ["channel", "beta"]])
      expect([mixed.status, mixed.body.data?.channel]).toEqual([201, "beta"])
      expect(readdirSync(artifactDir).length).toBe(before + 2)

      const taken = await upload(app, [["file", bytes], ["product_id", "42"], ["version", "2.0.0"]])
      expect([taken.status, taken.body.code]).toEqual([409, "release_exists"])
      const badChannel = await upload(app, [["file", bytes], ["product_id", "42"], ["version", "2.2.0"], ["channel", "nightly"]])
      expect([badChannel.status, badChannel.body.data.params]).toEqual([400, { channel: ALLOWED }])
      const noVersion = await upload(app, [["file", bytes], ["product_id", "42"]])
      expect(noVersion.status).toBe(400)
      expect(readdirSync(artifactDir).length).toBe(before + 2)
    })

    it("names the allowed channels for an unknown one, in both bodies and in the queries", async () => {
      const json = await app.call("POST", "/releases", {
        body: { product_id: 43, version: "1.0.0", channel: "nightly", artifact_url: "https://cdn.example.com/a.zip" }
      })
      expect([json.status, json.body.code, json.body.data.params]).toEqual([400, "rest_invalid_param", { channel: ALLOWED }])
      const before = await upload(app, [["product_id", "43"], ["version", "1.0.0"], ["channel", "nightly"], ["file", new Uint8Array(10)]])
      expect([before.status, before.body.data.params]).toEqual([400, { channel: ALLOWED }])
      const license = await admin(app).createLicense({ product_id: 43 })
      for (const route of ["/releases?channel=nightly", `/updates/check?license_key=${license.key}&version=1.0.0&channel=nightly`]) {
        const res = await app.call("GET", route, route.startsWith("/updates") ? { auth: null } : {})
        expect([res.status, res.body.code], route).toEqual([400, "rest_invalid_param"])
        for (const channel of ["stable", "rc", "beta", "alpha", "dev"]) expect(res.body.data.params.channel, route).toContain(channel)
      }
    })

    it("answers latest_version on an update check that finds nothing newer, with release, download_url and token_expires_at null", async () => {
      const publish = (version: string, channel: string) =>
        app.call("POST", "/releases", { body: { product_id: 44, version, channel, artifact_url: `https://cdn.example.com/${version}.zip` } })
      expect((await publish("1.2.0", "stable")).status).toBe(201)
      expect((await publish("1.3.0-beta.1", "beta")).status).toBe(201)
      const license = await admin(app).createLicense({ product_id: 44 })
      const check = (version: string, channel = "stable") =>
        app.call("GET", `/updates/check?license_key=${license.key}&version=${version}&channel=${channel}`, { auth: null }).then((r) => r.body.data)
      const none = { update_available: false, release: null, download_url: null, token_expires_at: null }
      expect(await check("1.2.0")).toEqual({ ...none, current_version: "1.2.0", latest_version: "1.2.0" })
      expect(await check("1.3.0-beta.1", "beta")).toEqual({ ...none, current_version: "1.3.0-beta.1", latest_version: "1.3.0-beta.1" })
      expect(await check("1.1.0")).toMatchObject({ update_available: true, latest_version: "1.2.0", release: { version: "1.2.0" } })
    })
  })
}

describe("deleting a release with the S3-compatible artifact store (s3rver on loopback)", () => {
  let app: TestApp
  let s3: S3rver
  let client: S3Client

  beforeAll(async () => {
    const directory = mkdtempSync(path.join(tmpdir(), "lm-s3rver-"))
    s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory })
    withMultipartUploadListing(s3, directory)
    const { port } = await s3.run()
    // The SDK's usual settings chain, as an operator would set it; s3rver predates the default CRC checksums.
    process.env.AWS_ACCESS_KEY_ID = "S3RVER"
    process.env.AWS_SECRET_ACCESS_KEY = "S3RVER"
    process.env.AWS_REQUEST_CHECKSUM_CALCULATION = "when_required"
    process.env.AWS_RESPONSE_CHECKSUM_VALIDATION = "when_required"
    const endpoint = `http://127.0.0.1:${port}`
    client = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true })
    await client.send(new CreateBucketCommand({ Bucket: "releases" }))
    app = await startApp("memory", { artifacts: { s3: { bucket: "releases", endpoint, region: "us-east-1", prefix: "lm/" } } })
  }, 60_000)
  afterAll(async () => {
    await app?.close()
    client?.destroy()
    await s3?.close()
  })

  it("removes the deleted release's object from the bucket", async () => {
    await publishAndDelete(app, 51, async () =>
      (await client.send(new ListObjectsV2Command({ Bucket: "releases", Prefix: "lm/" }))).KeyCount ?? 0)
  })
})
