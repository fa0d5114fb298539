/**
 * `lm licenses import` and `lm licenses export` against a real `lm serve` (CONTRACT §17, issue 30): an import in
 * another system's format with its upload progress on stderr, an export to stdout and to a file with its progress,
 * the round trip export → delete → import, and the exit codes of refusals (1, one stderr line with the code) and
 * usage errors (2).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { lm, type LmServer, startLmServer } from "./support/Lm.js"

// Every step starts a Node process (about a second, several on a loaded two-core machine).
describe("lm licenses import and export against a running server", { timeout: 300_000 }, () => {
  let server: LmServer
  const dir = mkdtempSync(join(tmpdir(), "lm-cli-transfer-"))
  beforeAll(async () => {
    server = await startLmServer()
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const lastLine = (text: string) => text.trim().split("\n").at(-1)

  it("import reads License Manager for WooCommerce's export, with upload progress ending at 100%", async () => {
    const file = join(dir, "lmfwc.json")
    writeFileSync(file, JSON.stringify([
      { license_key: "WOO-AAAA-1111", product_id: 61, times_activated_max: 3, status: 3, expires_at: "2031-01-01 00:00:00" },
      { license_key: "woo-bbbb-2222", product_id: 61, status: 4 }
    ]))
    const run = await server.run(["licenses", "import", file, "--format", "lmfwc", "--json"])
    expect(run.code, run.err).toBe(0)
    expect(JSON.parse(run.out)).toMatchObject({ imported: 2 })
    const progress = run.err.trim().split("\n")
    const size = Buffer.byteLength(readFileSync(file, "utf8"))
    expect(progress[0]).toBe(`[${"-".repeat(30)}]   0% 0 B/${size} B`)
    expect(progress.at(-1)).toBe(`[${"#".repeat(30)}] 100% ${size} B/${size} B`)
    const listed = await server.json(["licenses", "list", "--product-id", "61"])
    expect(listed.licenses.map((l: any) => [l.license_key, l.status, l.source, l.max_activations]).sort()).toEqual([
      ["WOO-AAAA-1111", "inactive", "import", 3],
      ["WOO-BBBB-2222", "suspended", "import", null]
    ])
    // Without --json: `key: value` lines.
    const again = join(dir, "one.json")
    writeFileSync(again, JSON.stringify([{ license_key: "WOO-CCCC-3333", product_id: 61 }]))
    const table = await server.run(["licenses", "import", again, "--format", "lmfwc"])
    expect([table.code, table.out]).toEqual([0, expect.stringMatching(/^imported: +1$/m)])
  })

  it("export writes NDJSON to stdout with progress on stderr; --out writes CSV and prints the summary", async () => {
    const stdout = await server.run(["licenses", "export", "--product-id", "61"])
    expect(stdout.code, stdout.err).toBe(0)
    const lines = stdout.out.trim().split("\n").map((line) => JSON.parse(line))
    expect(lines.map((l) => l.license_key)).toEqual(["WOO-AAAA-1111", "WOO-BBBB-2222", "WOO-CCCC-3333"])
    expect(stdout.err.trim().split("\n")[0]).toBe(`[${"-".repeat(30)}]   0% 0/3 licenses`)
    expect(lastLine(stdout.err)).toBe(`[${"#".repeat(30)}] 100% 3/3 licenses`)

    const out = join(dir, "export.csv")
    const summary = await server.json(["licenses", "export", "--format", "csv", "--status", "suspended", "--out", out])
    const csv = readFileSync(out, "utf8")
    expect(summary).toEqual({ exported: 1, format: "csv", out, bytes: Buffer.byteLength(csv) })
    const [header, ...rows] = csv.trim().split("\n")
    expect(header!.split(",")).toContain("license_key")
    expect(rows).toHaveLength(1)
    expect(rows[0]).toContain("WOO-BBBB-2222")

    const none = await server.run(["licenses", "export", "--product-id", "999", "--out", join(dir, "none.ndjson")])
    expect([none.code, none.out.trim(), lastLine(none.err)]).toEqual([
      0,
      expect.stringMatching(/^exported: +0$/m),
      `[${"#".repeat(30)}] 100% 0/0 licenses`
    ])
  })

  it("round trip: export NDJSON, delete the licenses, import the file back as lm", async () => {
    const out = join(dir, "round.ndjson")
    expect((await server.json(["licenses", "export", "--product-id", "61", "--out", out])).exported).toBe(3)
    const before = readFileSync(out, "utf8").trim().split("\n").map((line) => JSON.parse(line))
    for (const license of before) await server.json(["licenses", "delete", license.license_key])
    expect((await server.json(["licenses", "list", "--product-id", "61"])).licenses).toEqual([])
    expect(await server.json(["licenses", "import", out, "--format", "lm"])).toMatchObject({ imported: 3 })
    const after = (await server.json(["licenses", "list", "--product-id", "61"])).licenses
    expect(after.map((l: any) => [l.license_key, l.status, l.max_activations, l.expires_at]).sort()).toEqual(
      before.map((l: any) => [l.license_key, l.status, l.max_activations, l.expires_at]).sort()
    )
  })

  it("refusals exit 1 with one stderr line naming the code; nothing is imported from a file with a bad row", async () => {
    const bad = join(dir, "bad.csv")
    writeFileSync(bad, "license_key,product_id,expires_at\nCSV-OK-0001,62,\nCSV-BAD-0002,62,tomorrow\n")
    const refused = await server.run(["licenses", "import", bad, "--format", "csv"])
    expect([refused.code, refused.out]).toEqual([1, ""])
    expect(lastLine(refused.err)).toMatch(/^rest_invalid_param: .*data\[1\]\.expires_at/)
    expect((await server.json(["licenses", "list", "--product-id", "62"])).licenses).toEqual([])

    const existing = join(dir, "existing.json")
    writeFileSync(existing, JSON.stringify([{ license_key: "WOO-AAAA-1111" }]))
    const conflict = await server.run(["licenses", "import", existing, "--format", "lm"])
    expect([conflict.code, lastLine(conflict.err)!.split(":")[0]]).toEqual([1, "license_exists"])

    const garbage = join(dir, "garbage.json")
    writeFileSync(garbage, "[{\"license_key\": \"A-B\"}\nnot json\n")
    const notJson = await server.run(["licenses", "import", garbage, "--format", "lm"])
    expect([notJson.code, notJson.err.trim()]).toEqual([1, `invalid_file: ${garbage} is neither JSON nor NDJSON (line 1 is not JSON)`])

    const missing = await server.run(["licenses", "import", join(dir, "absent.json"), "--format", "lm"])
    expect([missing.code, missing.err.split(":")[0]]).toEqual([1, "file_unreadable"])

    // A refused export leaves no file behind.
    const out = join(dir, "refused.ndjson")
    const wrongKey = await server.run(["licenses", "export", "--out", out], { LM_CONSUMER_SECRET: `cs_${"0".repeat(40)}` })
    expect([wrongKey.code, lastLine(wrongKey.err)!.split(":")[0], existsSync(out)]).toEqual([1, "rest_unauthorized", false])
    const noFolder = await server.run(["licenses", "export", "--out", join(dir, "absent", "x.ndjson")])
    expect([noFolder.code, lastLine(noFolder.err)!.split(":")[0]]).toEqual([1, "output_unwritable"])
  })

  it("usage errors exit 2: no --format, an unknown format, no LM_URL", async () => {
    const file = join(dir, "usage.json")
    writeFileSync(file, "[]")
    const noFormat = await server.run(["licenses", "import", file])
    expect([noFormat.code, noFormat.err]).toEqual([2, expect.stringContaining("--format")])
    const unknown = await server.run(["licenses", "export", "--format", "xml"])
    expect([unknown.code, unknown.err]).toEqual([2, expect.stringContaining("--format")])
    const noServer = await lm(["licenses", "export"])
    expect([noServer.code, noServer.err]).toEqual([2, expect.stringContaining("LM_URL is not set")])
  })
})
