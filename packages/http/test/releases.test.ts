/**
 * Releases and licensed updates over HTTP (CONTRACT §9), on the memory store and PGlite: a multipart upload
 * streamed to the artifact store (bytes and SHA-256 round-trip exactly), 409 for a taken version, JSON releases
 * with `artifact_url`, the list newest semver first, the update check and its signed `download_url`, the download
 * (ranges, ETag, If-None-Match, If-Range, HEAD, 302 for an external artifact, tampered and expired tokens, a
 * license revoked or moved to another product after the check), a license without a product offered nothing
 * (403 `product_mismatch`), and uploads over the limit or aborted midway leaving nothing behind; a form
 * cut short or malformed is 400 and a client gone before, during or after the store's round trips leaves the
 * process up (never an unhandled error) and nothing half kept; text fields are kept whole up to the JSON body's
 * 1 MiB; on PostgreSQL too when DATABASE_URL is set, and with the S3-compatible artifact store (s3rver). An upload
 * that trickles for longer than the body timeout is taken while it never stalls for the idle timeout; one that
 * stalls, or outlasts the upload timeout, gets 408 and leaves nothing; an artifact store that cannot write is 503
 * at once. `download_url` follows the Host the client reached (X-Forwarded-Proto and -Host only
 * behind a trusted proxy); a malformed Host is a 400 envelope.
 */
import { createHash } from "node:crypto"
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3"
import { Effect, Layer } from "effect"
import { Ports } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { layerOnClient, PgliteTemplate } from "@lm/storage-pg"
import S3rver from "s3rver"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connect, type RawConnection, requestText } from "../../../test/http/support/RawHttp.js"
import { eventually } from "../../../test/support/eventually.js"
import { freshPostgresStore } from "../../../test/storage-contract/pg-support.js"
import { admin } from "./support/Admin.js"
import { adminAuth, aheadClock, startApp, type TestApp, type TestStore } from "./support/App.js"
import { withMultipartUploadListing } from "./support/S3rverUploads.js"
import { serviceUrl } from "../../../test/support/services.js"

/** Deterministic bytes. */
const bytesOf = (size: number, seed = 1): Buffer => {
  const out = Buffer.alloc(size)
  let x = seed
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0
    out[i] = x >>> 24
  }
  return out
}
const json = async (response: Response): Promise<any> => await response.json()
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

const MAX_ARTIFACT = 4 * 1024 * 1024
/** The download tokens' TTL here: long enough for any check on a loaded machine; the tests move the clock past it. */
const TOKEN_TTL_SECONDS = 600

/**
 * A store whose release lookup (the check before an upload is stored) or insert (after it is stored) can be held
 * until the test lets it go, to cut an upload at a known point of its round trips to the store.
 */
const gatedStore = <E>(base: Layer.Layer<any, E, never>) => {
  let held: { readonly point: "lookup" | "insert"; readonly reached: () => void; readonly go: Promise<void> } | undefined
  const pass = (point: "lookup" | "insert") =>
    Effect.promise(async () => {
      const hold = held
      if (hold?.point !== point) return
      held = undefined
      hold.reached()
      await hold.go
    })
  const layer = Layer.effect(
    Ports.ReleaseRepository,
    Effect.map(Effect.service(Ports.ReleaseRepository), (repository) => ({
      ...repository,
      findByVersion: (productId: number, version: string) => Effect.andThen(pass("lookup"), repository.findByVersion(productId, version)),
      insert: (draft: Parameters<typeof repository.insert>[0]) => Effect.andThen(pass("insert"), repository.insert(draft))
    }))
  ).pipe(Layer.provideMerge(base))
  /** Holds the next lookup or insert: `reached` resolves once it is held, `go` lets it go on. */
  const hold = (point: "lookup" | "insert") => {
    let reached!: () => void
    let go!: () => void
    const isReached = new Promise<void>((resolve) => (reached = resolve))
    held = { point, reached, go: new Promise<void>((resolve) => (go = resolve)) }
    return { reached: isReached, go }
  }
  return { layer, hold }
}

/** What would have ended a server process (an unhandled `'error'` event): in-process, vitest catches it instead. */
const uncaught: Array<string> = []
process.on("uncaughtExceptionMonitor", (error) => uncaught.push(String(error)))

/** A multipart upload written by hand, so that a test can send part of it, cut it or break it. */
const cutBoundary = "----lmcut"
const formFields = (productId: number, version = "1.0.0") =>
  `--${cutBoundary}\r\ncontent-disposition: form-data; name="product_id"\r\n\r\n${productId}\r\n` +
  `--${cutBoundary}\r\ncontent-disposition: form-data; name="version"\r\n\r\n${version}\r\n`
const filePartHead = `--${cutBoundary}\r\ncontent-disposition: form-data; name="file"; filename="a.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`
const formTail = `\r\n--${cutBoundary}--\r\n`

/** PostgreSQL joins the stores when DATABASE_URL names a server (CI sets it), on a database of its own. */
const postgresUrl = serviceUrl("DATABASE_URL")
const stores: Array<TestStore | "postgres"> = ["memory", "pglite", ...(postgresUrl === "" ? [] : ["postgres" as const])]

for (const store of stores) {
  describe(`releases over HTTP (${store})`, () => {
    let app: TestApp
    let artifactDir: string
    /** The server's wall clock: moved past a download token's TTL instead of waiting for it. */
    const clock = aheadClock()
    const gate = gatedStore(
      store === "postgres"
        ? freshPostgresStore(postgresUrl)
        : store === "pglite"
        ? layerOnClient.pipe(Layer.provide(PgliteTemplate.layerTemporaryMigrated))
        : MemoryStore.layer
    )

    beforeAll(async () => {
      artifactDir = path.join(mkdtempSync(path.join(tmpdir(), "lm-release-test-")), "artifacts")
      app = await startApp(store === "postgres" ? "memory" : store, {
        downloadTokenTtlSeconds: TOKEN_TTL_SECONDS,
        clock: clock.clock,
        settings: { maxArtifactBytes: MAX_ARTIFACT },
        artifacts: { dir: artifactDir },
        storeLayer: gate.layer
      })
    }, 120_000)
    afterAll(() => app?.close())

    const upload = (fields: Record<string, string>, file: Uint8Array | undefined, filename = "app.tar.gz", auth: string | null = adminAuth) => {
      const form = new FormData()
      for (const [name, value] of Object.entries(fields)) form.append(name, value)
      if (file !== undefined) form.append("file", new Blob([file], { type: "application/gzip" }), filename)
      return fetch(`${app.apiBase}/releases`, { method: "POST", body: form, headers: auth === null ? {} : { authorization: auth } })
    }
    const get = (url: string, headers: Record<string, string> = {}, method = "GET") => fetch(url, { method, headers, redirect: "manual" })

    it("publishes an uploaded artifact once; its bytes and SHA-256 come back exactly, with ranges and validators", async () => {
      const bytes = bytesOf(3 * 1024 * 1024 + 17)
      const created = await upload({ product_id: "11", version: "1.1.0", channel: "stable", changelog: "Faster" }, bytes, "app ü.tar.gz")
      expect(created.status).toBe(201)
      const release = (await json(created)).data
      expect(release).toMatchObject({
        product_id: 11,
        version: "1.1.0",
        channel: "stable",
        changelog: "Faster",
        size: bytes.length,
        sha256: sha256(bytes),
        filename: "app ü.tar.gz",
        content_type: "application/gzip",
        artifact_url: null
      })
      const again = await upload({ product_id: "11", version: "1.1.0" }, bytesOf(1000))
      expect(again.status).toBe(409)
      expect((await json(again)).code).toBe("release_exists")
      expect(readdirSync(artifactDir)).toHaveLength(1)

      const license = await admin(app).createLicense({ product_id: 11, max_activations: 1 })
      const check = await app.call("GET", `/updates/check?license_key=${license.key}&version=1.0.0`, { auth: null })
      expect(check.status).toBe(200)
      expect(check.body.data).toMatchObject({ update_available: true, current_version: "1.0.0", latest_version: "1.1.0", release: { id: release.id } })
      const url: string = check.body.data.download_url
      expect(url.startsWith(`${app.apiBase}/updates/download?token=`)).toBe(true)
      expect(Date.parse(check.body.data.token_expires_at)).toBeGreaterThan(Date.now() - 5000)

      const whole = await get(url)
      expect(whole.status).toBe(200)
      const body = Buffer.from(await whole.arrayBuffer())
      expect(body.length).toBe(bytes.length)
      expect(sha256(body)).toBe(sha256(bytes))
      expect(whole.headers.get("content-length")).toBe(String(bytes.length))
      expect(whole.headers.get("etag")).toBe(`"${sha256(bytes)}"`)
      expect(whole.headers.get("accept-ranges")).toBe("bytes")
      expect(whole.headers.get("content-disposition")).toBe(`attachment; filename="app _.tar.gz"; filename*=UTF-8''app%20%C3%BC.tar.gz`)

      const etag = `"${sha256(bytes)}"`
      const last = bytes.length - 1
      for (const [range, start, end] of [["bytes=0-0", 0, 0], [`bytes=${last}-${last}`, last, last], ["bytes=-100", bytes.length - 100, last], ["bytes=1000-", 1000, last], [`bytes=10-${last + 500}`, 10, last]] as const) {
        const part = await get(url, { range })
        expect(part.status, range).toBe(206)
        expect(part.headers.get("content-range")).toBe(`bytes ${start}-${end}/${bytes.length}`)
        expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(start, end + 1)), range).toBe(true)
      }
      const beyond = await get(url, { range: `bytes=${bytes.length}-` })
      expect(beyond.status).toBe(416)
      expect(beyond.headers.get("content-range")).toBe(`bytes */${bytes.length}`)
      await beyond.text()
      const unchanged = await get(url, { "if-none-match": etag })
      expect(unchanged.status).toBe(304)
      const staleRange = await get(url, { range: "bytes=0-0", "if-range": `"other"` })
      expect(staleRange.status).toBe(200)
      expect(Buffer.from(await staleRange.arrayBuffer()).length).toBe(bytes.length)
      const head = await get(url, {}, "HEAD")
      expect(head.status).toBe(200)
      expect(head.headers.get("content-length")).toBe(String(bytes.length))
      expect(await head.text()).toBe("")

      const [payload, signature] = new URL(url).searchParams.get("token")!.split(".")
      const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, "base64url").toString()), rid: release.id + 1 })).toString("base64url")
      const tampered = await get(`${app.apiBase}/updates/download?token=${forged}.${signature}`)
      expect(tampered.status).toBe(403)
      expect((await json(tampered)).code).toBe("download_token_invalid")
      expect((await json(await get(`${app.apiBase}/updates/download`))).code).toBe("download_token_invalid")

      // Once its TTL is over, the token expires without anything else changing.
      expect((await get(url, {}, "HEAD")).status).toBe(200)
      clock.advance(TOKEN_TTL_SECONDS * 1000 + 1000)
      const expired = await get(url)
      expect(expired.status).toBe(403)
      expect((await json(expired)).code).toBe("download_token_expired")
    })

    it("refuses a download once the license is revoked after the check; external artifacts redirect", async () => {
      const created = await app.call("POST", "/releases", { body: { product_id: 12, version: "2.0.0", artifact_url: "https://cdn.example.com/app-2.0.0.zip", sha256: "a".repeat(64), size: 10 } })
      expect(created.status).toBe(201)
      expect(created.body.data).toMatchObject({ artifact_url: "https://cdn.example.com/app-2.0.0.zip", size: 10, sha256: "a".repeat(64) })
      const license = await admin(app).createLicense({ product_id: 12 })
      const check = await app.call("GET", `/updates/check?license_key=${license.key}&version=1.9.9`, { auth: null })
      const url: string = check.body.data.download_url
      const redirect = await get(url)
      expect(redirect.status).toBe(302)
      expect(redirect.headers.get("location")).toBe("https://cdn.example.com/app-2.0.0.zip")
      await admin(app).revoke(license.key)
      const refused = await get(url)
      expect(refused.status).toBe(403)
      expect((await json(refused)).code).toBe("license_revoked")
      const mismatch = await app.call("GET", `/updates/check?license_key=${license.key}&version=1.0.0&product_id=11`, { auth: null })
      expect([mismatch.status, mismatch.body.code]).toEqual([403, "license_revoked"])
      const other = await admin(app).createLicense({ product_id: 12 })
      const wrongProduct = await app.call("GET", `/updates/check?license_key=${other.key}&version=1.0.0&product_id=11`, { auth: null })
      expect([wrongProduct.status, wrongProduct.body.code]).toEqual([403, "product_mismatch"])
      const upToDate = await app.call("GET", `/updates/check?license_key=${other.key}&version=2.0.0`, { auth: null })
      // Up to date: `latest_version` is the newest version the channel sees (CONTRACT §9).
      expect(upToDate.body.data).toMatchObject({ update_available: false, latest_version: "2.0.0", release: null, download_url: null, token_expires_at: null })
    })

    it("a license without a product is offered nothing; a download token stops working once its license moves to another product", async () => {
      const created = await app.call("POST", "/releases", { body: { product_id: 17, version: "2.0.0", artifact_url: "https://cdn.example.com/app-17.zip" } })
      expect(created.status).toBe(201)
      const productless = await admin(app).createLicense({})
      for (const product of ["", "&product_id=17"]) {
        const check = await app.call("GET", `/updates/check?license_key=${productless.key}&version=1.0.0${product}`, { auth: null })
        expect([check.status, check.body.code], product).toEqual([403, "product_mismatch"])
      }
      const license = await admin(app).createLicense({ product_id: 17 })
      const check = await app.call("GET", `/updates/check?license_key=${license.key}&version=1.0.0`, { auth: null })
      expect(check.body.data).toMatchObject({ update_available: true, release: { id: created.body.data.id } })
      const url: string = check.body.data.download_url
      expect((await get(url)).status).toBe(302)
      await admin(app).update(license.key, { product_id: 18 })
      const moved = await get(url)
      expect([moved.status, (await json(moved)).code]).toEqual([403, "product_mismatch"])
      await admin(app).update(license.key, { product_id: null })
      const none = await get(url)
      expect([none.status, (await json(none)).code]).toEqual([403, "product_mismatch"])
    })

    it("lists releases newest semver first, filtered by product and channel", async () => {
      for (const [version, channel] of [["1.0.0", "stable"], ["1.2.0-beta.2", "beta"], ["1.2.0-beta.10", "beta"], ["1.2.0", "stable"], ["1.10.0", "stable"]]) {
        const created = await app.call("POST", "/releases", { body: { product_id: 13, version, channel, artifact_url: `https://cdn.example.com/${version}` } })
        expect(created.status).toBe(201)
      }
      const all = await app.call("GET", "/releases?product_id=13")
      expect(all.body.data.releases.map((r: any) => r.version)).toEqual(["1.10.0", "1.2.0", "1.2.0-beta.10", "1.2.0-beta.2", "1.0.0"])
      expect(all.body.meta).toEqual({ total: 5, page: 1, per_page: 20, total_pages: 1 })
      const beta = await app.call("GET", "/releases?product_id=13&channel=beta&per_page=1&page=2")
      expect(beta.body.data.releases.map((r: any) => r.version)).toEqual(["1.2.0-beta.2"])
      const badVersion = await app.call("POST", "/releases", { body: { product_id: 13, version: "v2", artifact_url: "https://cdn.example.com/x" } })
      expect([badVersion.status, badVersion.body.data.params]).toEqual([400, { version: "must be a semantic version (e.g. 1.4.0 or 2.0.0-rc.1)" }])
      const badFields = await app.call("POST", "/releases", { body: { product_id: "x", version: "2.0.0", artifact_url: "https://cdn.example.com/x", colour: "red" } })
      expect([badFields.status, badFields.body.code]).toEqual([400, "rest_invalid_param"])
      expect(Object.keys(badFields.body.data.params)).toContain("product_id")
      const badUrl = await app.call("POST", "/releases", { body: { product_id: 13, version: "2.0.0", artifact_url: "ftp://x" } })
      expect([badUrl.status, badUrl.body.data.params]).toEqual([400, { artifact_url: "must be an http or https URL" }])
    })

    it("answers 401, 415 and a missing file with envelopes, and keeps nothing", async () => {
      const noAuth = await upload({ product_id: "14", version: "1.0.0" }, bytesOf(10), "a", null)
      expect([noAuth.status, (await json(noAuth)).code]).toEqual([401, "rest_unauthorized"])
      const plain = await fetch(`${app.apiBase}/releases`, { method: "POST", body: "hello", headers: { authorization: adminAuth, "content-type": "text/plain" } })
      expect([plain.status, (await json(plain)).code]).toEqual([415, "rest_unsupported_media_type"])
      const noFile = await upload({ product_id: "14", version: "1.0.0" }, undefined)
      expect([noFile.status, (await json(noFile)).data.params]).toEqual([400, { file: "is required (a part named file)" }])
      expect((await app.call("GET", "/releases?product_id=14")).body.meta.total).toBe(0)
    })

    it("keeps a long changelog whole in either encoding; text fields over the JSON body's 1 MiB are 400 naming the field", async () => {
      const changelog = "Fixed: ".padEnd(100 * 1024, "ü")
      const viaForm = await upload({ product_id: "23", version: "1.0.0", changelog }, bytesOf(10))
      expect(viaForm.status).toBe(201)
      expect((await json(viaForm)).data.changelog).toBe(changelog)
      const viaJson = await app.call("POST", "/releases", { body: { product_id: 23, version: "1.0.1", changelog, artifact_url: "https://cdn.example.com/a" } })
      expect([viaJson.status, viaJson.body.data.changelog]).toEqual([201, changelog])

      const before = readdirSync(artifactDir).length
      const tooLong = await upload({ product_id: "23", version: "1.0.2", changelog: "x".repeat(1024 * 1024 + 1) }, bytesOf(10))
      expect([tooLong.status, (await json(tooLong)).data.params]).toEqual([400, { changelog: "is too long: the fields may take 1048576 bytes in all, as a JSON body" }])
      const together = await upload({ product_id: "23", changelog: "x".repeat(1024 * 1024 - 2), version: "1.0.2" }, bytesOf(10))
      expect([together.status, (await json(together)).data.params]).toEqual([400, { version: "is too long: the fields may take 1048576 bytes in all, as a JSON body" }])
      const many: Record<string, string> = { product_id: "23", version: "1.0.2" }
      for (let i = 0; i < 20; i++) many[`note_${i}`] = "x"
      const tooMany = await upload(many, bytesOf(10))
      expect([tooMany.status, (await json(tooMany)).data.params]).toEqual([400, { body: "has more than 20 fields" }])
      expect(readdirSync(artifactDir)).toHaveLength(before)
      expect((await app.call("GET", "/releases?product_id=23")).body.meta.total).toBe(2)
    })

    it("cuts off an upload over LM_MAX_ARTIFACT_BYTES with 413 and keeps nothing", async () => {
      const before = readdirSync(artifactDir).length
      const tooLarge = await upload({ product_id: "15", version: "1.0.0" }, bytesOf(MAX_ARTIFACT + 1))
      expect(tooLarge.status).toBe(413)
      expect((await json(tooLarge)).code).toBe("rest_payload_too_large")
      expect((await app.call("GET", "/releases?product_id=15")).body.meta.total).toBe(0)
      await eventually(() => expect(readdirSync(artifactDir)).toHaveLength(before))
      const exact = await upload({ product_id: "15", version: "1.0.0" }, bytesOf(MAX_ARTIFACT))
      expect(exact.status).toBe(201)
    })

    it("an upload whose client disconnects midway leaves no file and no release", async () => {
      const before = readdirSync(artifactDir).length
      const boundary = "----lmtest"
      const head = `--${boundary}\r\ncontent-disposition: form-data; name="product_id"\r\n\r\n16\r\n` +
        `--${boundary}\r\ncontent-disposition: form-data; name="version"\r\n\r\n1.0.0\r\n` +
        `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`
      const url = new URL(`${app.apiBase}/releases`)
      await new Promise<void>((resolve) => {
        const req = httpRequest({
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: { authorization: adminAuth, "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": String(2 * 1024 * 1024) }
        })
        req.on("error", () => resolve())
        req.write(head)
        req.write(bytesOf(512 * 1024), () => {
          // Wait until the server is writing the file (a temporary file appears), then go away.
          void eventually(() => expect(readdirSync(artifactDir).length).toBeGreaterThan(before)).then(() => {
            req.destroy()
            resolve()
          })
        })
      })
      await eventually(() => expect(readdirSync(artifactDir)).toHaveLength(before))
      expect((await app.call("GET", "/releases?product_id=16")).body.meta.total).toBe(0)
    })

    /** Opens a connection and sends the head of a multipart upload of `length` body bytes, then `body`. */
    const rawUpload = async (length: number, ...body: ReadonlyArray<string | Uint8Array>) => {
      const url = new URL(`${app.apiBase}/releases`)
      const connection = await connect(Number(url.port))
      connection.write(requestText("POST", url.pathname, {
        authorization: adminAuth,
        "content-type": `multipart/form-data; boundary=${cutBoundary}`,
        "content-length": String(length)
      }))
      for (const part of body) connection.socket.write(part)
      return connection
    }
    const byteLength = (...parts: ReadonlyArray<string | Uint8Array>) =>
      parts.reduce((sum, part) => sum + (typeof part === "string" ? Buffer.byteLength(part) : part.length), 0)
    /**
     * The server has taken in everything sent before: it answered a later request (and is still up). Not one that
     * reads the store: a held insert holds PGlite's one connection.
     */
    const answersLater = async () => expect((await app.call("GET", "/openapi.json", { auth: null })).status).toBe(200)
    const expectNothingKept = async (productId: number, files: number) => {
      await eventually(() => expect(readdirSync(artifactDir)).toHaveLength(files))
      expect((await app.call("GET", `/releases?product_id=${productId}`)).body.meta.total).toBe(0)
    }
    const expectIncompleteBody = async (connection: RawConnection) => {
      const answer = await connection.next()
      connection.destroy()
      expect([answer.status, JSON.parse(answer.body)]).toEqual([400, {
        success: false,
        code: "rest_invalid_param",
        message: "Invalid parameter: body.",
        data: { status: 400, params: { body: "is not a complete multipart/form-data body" } }
      }])
    }

    it("a body that ends inside the file part or breaks the multipart grammar is 400 (not 503, not a crash) and keeps nothing", async () => {
      uncaught.length = 0
      const before = readdirSync(artifactDir).length
      // The whole body arrives (its Content-Length), but the form ends inside a small and a large file part.
      for (const [productId, file] of [[24, bytesOf(10)], [25, bytesOf(300 * 1024)]] as const) {
        const cut = await rawUpload(byteLength(formFields(productId), filePartHead, file), formFields(productId), filePartHead, file)
        await expectIncompleteBody(cut)
        await expectNothingKept(productId, before)
      }
      // The same while the release's lookup in the store is on its way: the file part fails before it is stored.
      const held = gate.hold("lookup")
      const cutWhileChecked = await rawUpload(byteLength(formFields(19), filePartHead, "0123456789"), formFields(19), filePartHead, "0123456789")
      await held.reached
      await answersLater()
      held.go()
      await expectIncompleteBody(cutWhileChecked)
      await expectNothingKept(19, before)
      // A part header that is not a header.
      const malformed = `--${cutBoundary}\r\nnot a header\r\n\r\nx${formTail}`
      await expectIncompleteBody(await rawUpload(byteLength(formFields(20), malformed), formFields(20), malformed))
      await expectNothingKept(20, before)
      await answersLater()
      expect(uncaught).toEqual([])
    })

    it("a client that goes away before, during or after the store's round trips leaves the server up and nothing half kept", async () => {
      uncaught.length = 0
      const before = readdirSync(artifactDir).length
      const file = bytesOf(64 * 1024, 5)
      const whole = byteLength(formFields(22), filePartHead, file, formTail)
      // Before: while the fields arrive.
      const early = await rawUpload(whole, formFields(22).slice(0, 60))
      early.destroy()
      await answersLater()
      await expectNothingKept(22, before)
      // During the release's lookup, which comes before the file is stored.
      const lookup = gate.hold("lookup")
      const during = await rawUpload(whole, formFields(22), filePartHead, file.subarray(0, 1000))
      await lookup.reached
      during.destroy()
      await answersLater()
      lookup.go()
      await answersLater()
      await expectNothingKept(22, before)
      // After the file is stored, while the release is written: the upload had arrived whole, so it is published.
      const insert = gate.hold("insert")
      const late = await rawUpload(whole, formFields(22), filePartHead, file, formTail)
      await insert.reached
      late.destroy()
      await answersLater()
      insert.go()
      await eventually(async () => expect((await app.call("GET", "/releases?product_id=22")).body.data.releases).toMatchObject([{ size: file.length, sha256: sha256(file) }]))
      expect(readdirSync(artifactDir)).toHaveLength(before + 1)
      expect(uncaught).toEqual([])
    })
  })
}

describe("releases over HTTP with the S3-compatible artifact store (s3rver on loopback)", () => {
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
    app = await startApp("memory", {
      settings: { maxArtifactBytes: MAX_ARTIFACT },
      artifacts: { s3: { bucket: "releases", endpoint, region: "us-east-1", prefix: "lm/" } }
    })
  }, 60_000)
  afterAll(async () => {
    await app?.close()
    client?.destroy()
    await s3?.close()
  })

  it("uploads into the bucket and downloads exactly, with ranges; over the limit or cut short keeps nothing", async () => {
    const bytes = bytesOf(2 * 1024 * 1024 + 5, 7)
    const form = new FormData()
    form.append("product_id", "21")
    form.append("version", "3.0.0")
    form.append("file", new Blob([bytes]), "big.bin")
    const created = await fetch(`${app.apiBase}/releases`, { method: "POST", body: form, headers: { authorization: adminAuth } })
    expect(created.status).toBe(201)
    expect((await json(created)).data).toMatchObject({ size: bytes.length, sha256: sha256(bytes) })
    const listed = await client.send(new ListObjectsV2Command({ Bucket: "releases", Prefix: "lm/" }))
    expect(listed.KeyCount).toBe(1)

    const license = await admin(app).createLicense({ product_id: 21 })
    const url: string = (await app.call("GET", `/updates/check?license_key=${license.key}&version=2.0.0`, { auth: null })).body.data.download_url
    const whole = Buffer.from(await (await fetch(url)).arrayBuffer())
    expect(sha256(whole)).toBe(sha256(bytes))
    const first = await fetch(url, { headers: { range: "bytes=0-0" } })
    expect([first.status, Buffer.from(await first.arrayBuffer()).equals(bytes.subarray(0, 1))]).toEqual([206, true])
    const suffix = await fetch(url, { headers: { range: "bytes=-10" } })
    expect([suffix.status, Buffer.from(await suffix.arrayBuffer()).equals(bytes.subarray(bytes.length - 10))]).toEqual([206, true])

    const tooLarge = new FormData()
    tooLarge.append("product_id", "21")
    tooLarge.append("version", "3.0.1")
    tooLarge.append("file", new Blob([bytesOf(MAX_ARTIFACT + 1)]), "huge.bin")
    const refused = await fetch(`${app.apiBase}/releases`, { method: "POST", body: tooLarge, headers: { authorization: adminAuth } })
    expect(refused.status).toBe(413)
    await refused.text()
    expect((await client.send(new ListObjectsV2Command({ Bucket: "releases", Prefix: "lm/" }))).KeyCount).toBe(1)

    // A body whose form ends inside the file part: 400, not the artifact store's 503.
    const file = bytesOf(300 * 1024)
    const releasesUrl = new URL(`${app.apiBase}/releases`)
    const cut = await connect(Number(releasesUrl.port))
    cut.write(requestText("POST", releasesUrl.pathname, {
      authorization: adminAuth,
      "content-type": `multipart/form-data; boundary=${cutBoundary}`,
      "content-length": String(Buffer.byteLength(formFields(21, "3.0.2") + filePartHead) + file.length)
    }) + formFields(21, "3.0.2") + filePartHead)
    cut.socket.write(file)
    const answer = await cut.next()
    cut.destroy()
    expect([answer.status, JSON.parse(answer.body).data.params]).toEqual([400, { body: "is not a complete multipart/form-data body" }])
    expect((await client.send(new ListObjectsV2Command({ Bucket: "releases", Prefix: "lm/" }))).KeyCount).toBe(1)
  })
})

describe("release uploads: an idle timeout instead of the total body timeout; download_url's origin", () => {
  let app: TestApp
  let proxied: TestApp
  let artifactDir: string
  const boundary = "----lmidle"
  const partsHead = (productId: number) =>
    `--${boundary}\r\ncontent-disposition: form-data; name="product_id"\r\n\r\n${productId}\r\n` +
    `--${boundary}\r\ncontent-disposition: form-data; name="version"\r\n\r\n1.0.0\r\n` +
    `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="slow.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`
  const partsTail = `\r\n--${boundary}--\r\n`

  beforeAll(async () => {
    artifactDir = path.join(mkdtempSync(path.join(tmpdir(), "lm-release-idle-")), "artifacts")
    // Short settings: headers within 1 s and the whole body 1 s after them on every other route (2 s in all); an
    // upload may go on while a byte arrives every 2 s.
    app = await startApp("memory", { settings: { headersTimeoutSeconds: 1, bodyTimeoutSeconds: 1, uploadIdleTimeoutSeconds: 2 }, artifacts: { dir: artifactDir } })
    proxied = await startApp("memory", { settings: { trustProxyHops: 1 } })
  }, 60_000)
  afterAll(async () => {
    await app?.close()
    await proxied?.close()
  })

  /** Opens a raw connection to `server` and sends the upload's request head and first parts. */
  const startUpload = async (server: TestApp, productId: number, fileBytes: number) => {
    const url = new URL(`${server.apiBase}/releases`)
    const connection = await connect(Number(url.port))
    const length = Buffer.byteLength(partsHead(productId)) + fileBytes + Buffer.byteLength(partsTail)
    connection.write(requestText("POST", url.pathname, {
      authorization: adminAuth,
      "content-type": `multipart/form-data; boundary=${boundary}`,
      "content-length": String(length)
    }) + partsHead(productId))
    return connection
  }

  it("takes an upload that trickles for longer than the body timeout but never stalls for the idle timeout", async () => {
    const bytes = bytesOf(16 * 1024, 3)
    const connection = await startUpload(app, 31, bytes.length)
    // 16 chunks, one every 250 ms: 4 s in all, twice the headers and body timeouts together; never 2 s without a byte.
    for (let i = 0; i < 16; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250))
      connection.socket.write(bytes.subarray(i * 1024, (i + 1) * 1024))
    }
    connection.write(partsTail)
    const answer = await connection.next()
    connection.destroy()
    expect(answer.status, answer.body).toBe(201)
    expect(JSON.parse(answer.body).data).toMatchObject({ product_id: 31, size: bytes.length, sha256: sha256(bytes) })
  })

  it("cuts off an upload that stalls for the idle timeout with 408 and keeps nothing; other routes keep the total body timeout", async () => {
    const before = readdirSync(artifactDir).length
    const connection = await startUpload(app, 32, 64 * 1024)
    connection.socket.write(bytesOf(4096))
    // The server is writing the file (a temporary file appears); then nothing more is sent.
    await eventually(() => expect(readdirSync(artifactDir).length).toBeGreaterThan(before))
    const answer = await connection.next()
    expect(answer.status).toBe(408)
    expect(JSON.parse(answer.body)).toMatchObject({ success: false, code: "rest_request_timeout", data: { status: 408 } })
    expect(answer.headers.connection).toBe("close")
    await connection.closed
    await eventually(() => expect(readdirSync(artifactDir)).toHaveLength(before))
    expect((await app.call("GET", "/releases?product_id=32")).body.meta.total).toBe(0)

    // A JSON body that stops arriving still gets the total body timeout (1 s here), on releases as elsewhere.
    const url = new URL(`${app.apiBase}/releases`)
    const slow = await connect(Number(url.port))
    slow.write(requestText("POST", url.pathname, { authorization: adminAuth, "content-type": "application/json", "content-length": "100" }) + `{"product_id":`)
    const timedOut = await slow.next()
    expect([timedOut.status, JSON.parse(timedOut.body).code]).toEqual([408, "rest_request_timeout"])
    await slow.closed
  })

  it("cuts off an upload that keeps trickling past LM_UPLOAD_TIMEOUT_SECONDS with 408 and keeps nothing", async () => {
    const boundedDir = path.join(mkdtempSync(path.join(tmpdir(), "lm-release-bounded-")), "artifacts")
    const bounded = await startApp("memory", { settings: { uploadIdleTimeoutSeconds: 1, uploadTimeoutSeconds: 2 }, artifacts: { dir: boundedDir } })
    try {
      const bytes = bytesOf(64 * 1024, 4)
      const connection = await startUpload(bounded, 34, bytes.length)
      let settled = false
      const answered = connection.next().finally(() => (settled = true))
      // 1 KiB every 200 ms: never idle for 1 s, but 2 s in all come long before the 64 KiB are sent.
      for (let i = 0; i < 64 && !settled; i++) {
        connection.socket.write(bytes.subarray(i * 1024, (i + 1) * 1024))
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
      if (!settled) connection.write(partsTail)
      const answer = await answered
      expect([answer.status, JSON.parse(answer.body).message, answer.headers.connection])
        .toEqual([408, "The upload did not complete within 2 s.", "close"])
      await connection.closed
      await eventually(() => expect(readdirSync(boundedDir)).toHaveLength(0))
      expect((await bounded.call("GET", "/releases?product_id=34")).body.meta.total).toBe(0)
    } finally {
      await bounded.close()
    }
  })

  it("answers 503 with Retry-After as soon as the artifact store cannot write, without waiting for the rest of the body", async () => {
    // The folder is gone (a disk unmounted): the store fails at once; the 2 MiB body must not stall until the idle timeout.
    rmSync(artifactDir, { recursive: true })
    try {
      const form = new FormData()
      form.append("product_id", "33")
      form.append("version", "1.0.0")
      form.append("file", new Blob([bytesOf(2 * 1024 * 1024)]), "a.bin")
      const refused = await fetch(`${app.apiBase}/releases`, { method: "POST", body: form, headers: { authorization: adminAuth } })
      const body = await json(refused)
      expect([refused.status, body.code, refused.headers.get("retry-after")]).toEqual([503, "service_unavailable", String(body.data.retry_after)])
    } finally {
      mkdirSync(artifactDir, { mode: 0o700 })
    }
    expect((await app.call("GET", "/releases?product_id=33")).body.meta.total).toBe(0)
  })

  /** The update check of a new license and release on `server`, sent raw with these headers. */
  const checkWith = async (server: TestApp, productId: number, headers: Record<string, string>, httpVersion = "1.1") => {
    await server.call("POST", "/releases", { body: { product_id: productId, version: "2.0.0", artifact_url: "https://cdn.example.com/a.zip" } })
    const license = await admin(server).createLicense({ product_id: productId })
    const url = new URL(server.apiBase)
    const connection = await connect(Number(url.port))
    const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("")
    connection.write(`GET ${url.pathname}/updates/check?license_key=${license.key}&version=1.0.0 HTTP/${httpVersion}\r\n${head}connection: close\r\n\r\n`)
    const answer = await connection.next()
    connection.destroy()
    return { status: answer.status, body: JSON.parse(answer.body) }
  }

  it("builds download_url from the Host the client reached; X-Forwarded-Proto and -Host only behind a trusted proxy", async () => {
    const port = new URL(app.apiBase).port
    const direct = await checkWith(app, 41, { host: `licensing.example.com:${port}`, "x-forwarded-proto": "https", "x-forwarded-host": "evil.example.net" })
    expect(direct.status).toBe(200)
    expect(direct.body.data.download_url).toMatch(new RegExp(`^http://licensing\\.example\\.com:${port}/api/lm/v1/updates/download\\?token=[\\w.-]+$`))

    const viaProxy = await checkWith(proxied, 42, { host: "127.0.0.1:9", "x-forwarded-proto": "https", "x-forwarded-host": "licensing.example.com" })
    expect(viaProxy.status).toBe(200)
    expect(viaProxy.body.data.download_url).toMatch(/^https:\/\/licensing\.example\.com\/api\/lm\/v1\/updates\/download\?token=[\w.-]+$/)
  })

  it("answers a malformed Host with the 400 envelope, and an HTTP/1.0 request without one with the address it reached", async () => {
    for (const host of ["evil.example.net/path?", "a b", "licensing.example.com:80:80", "user@licensing.example.com"]) {
      const answer = await checkWith(app, 43, { host })
      expect([answer.status, answer.body.code], host).toEqual([400, "rest_invalid_param"])
      expect(Object.keys(answer.body.data.params)).toEqual(["host"])
    }
    const proxiedBad = await checkWith(proxied, 44, { host: "127.0.0.1", "x-forwarded-host": "a/b" })
    expect([proxiedBad.status, proxiedBad.body.code]).toEqual([400, "rest_invalid_param"])

    const noHost = await checkWith(app, 45, {}, "1.0")
    expect(noHost.status).toBe(200)
    expect(noHost.body.data.download_url.startsWith(`${app.apiBase}/updates/download?token=`)).toBe(true)
  })
})
