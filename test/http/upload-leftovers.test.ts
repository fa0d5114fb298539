/**
 * Issue 25: a release upload killed midway (SIGKILL: nothing runs, its temporary file stays) is not left behind for
 * good. The real server (`lm serve`) as a child process takes part of an upload and is killed; a server started
 * on the same artifact folder once the longest upload (`LM_UPLOAD_TIMEOUT_SECONDS`, 1 s here) has passed removes
 * the leftover before it listens, says so in its log, and takes uploads as before.
 */
import { mkdtempSync, readdirSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterEach, expect, it } from "vitest"
import { adminAuth, adminKey } from "../../packages/http/test/support/App.js"
import { eventually } from "../support/eventually.js"
import { type ServerProcess, spawnServer, waitForOutput } from "./support/Child.js"
import { connect, requestText } from "./support/RawHttp.js"

const servers: Array<ServerProcess> = []
afterEach(() => {
  for (const server of servers.splice(0)) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
})

/** Starts `lm serve` on the memory store with its artifacts in `artifactDir`; its API base. */
const start = async (artifactDir: string, env: Record<string, string> = {}) => {
  const server = spawnServer({
    PORT: "0",
    HOST: "127.0.0.1",
    LM_STORAGE: "memory",
    LM_ARTIFACT_DIR: artifactDir,
    LM_SWEEP_INTERVAL: "0",
    LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
    LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret,
    ...env
  })
  servers.push(server)
  const [, apiBase] = await waitForOutput(server, /Listening on (http:\/\/\S+)/)
  return { server, apiBase: apiBase! }
}

const leftovers = (dir: string) => readdirSync(dir).filter((name) => name.startsWith(".upload-"))

it("a server starting after the longest upload has passed removes the unfinished file of an upload killed midway", async () => {
  const artifactDir = path.join(mkdtempSync(path.join(tmpdir(), "lm-upload-leftovers-")), "artifacts")
  const first = await start(artifactDir)

  // Part of a 4 MiB upload, then SIGKILL while its file is being written.
  const boundary = "----lmkill"
  const head = `--${boundary}\r\ncontent-disposition: form-data; name="product_id"\r\n\r\n51\r\n` +
    `--${boundary}\r\ncontent-disposition: form-data; name="version"\r\n\r\n1.0.0\r\n` +
    `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`
  const url = new URL(`${first.apiBase}/releases`)
  const upload = await connect(Number(url.port))
  upload.write(requestText("POST", url.pathname, {
    authorization: adminAuth,
    "content-type": `multipart/form-data; boundary=${boundary}`,
    "content-length": String(Buffer.byteLength(head) + 4 * 1024 * 1024)
  }) + head)
  upload.socket.write(Buffer.alloc(1024 * 1024, 7))
  await eventually(() => expect(leftovers(artifactDir).map((name) => statSync(path.join(artifactDir, name)).size)).toEqual([expect.any(Number)]))
  first.server.child.kill("SIGKILL")
  expect(await first.server.exited).toBe("SIGKILL")
  upload.destroy()
  const [leftover] = leftovers(artifactDir)
  expect(leftover).toBeDefined()

  // The restart comes once the leftover is older than the longest upload (1 s here): it is gone before the server listens.
  await eventually(() => expect(Date.now() - statSync(path.join(artifactDir, leftover!)).mtimeMs).toBeGreaterThan(1000), { interval: 100 })
  const second = await start(artifactDir, { LM_UPLOAD_TIMEOUT_SECONDS: "1" })
  expect(readdirSync(artifactDir)).toEqual([])
  expect(second.server.output()).toMatch(/removed 1 unfinished files of uploads cut off by a crash/)

  const form = new FormData()
  form.append("product_id", "51")
  form.append("version", "1.0.0")
  form.append("file", new Blob([Buffer.alloc(1000, 1)]), "a.bin")
  const created = await fetch(`${second.apiBase}/releases`, { method: "POST", body: form, headers: { authorization: adminAuth } })
  expect(created.status).toBe(201)
  expect(readdirSync(artifactDir)).toHaveLength(1)
}, 120_000)
