/**
 * The Node-only helpers of `@lm/client/node`: the machine fingerprint (Linux, from the OS machine id, hashed with
 * the product) and the file storage (kept across processes, private to the user).
 */
import { createHash } from "node:crypto"
import { mkdtempSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { fileStorage, fingerprintOf, linuxMachineIdFiles, machineFingerprint, machineId } from "@lm/client/node"

const osMachineId = (): string => {
  for (const path of linuxMachineIdFiles) {
    try {
      const id = readFileSync(path, "utf8").trim()
      if (id !== "") return id
    } catch {
      // next one
    }
  }
  throw new Error(`this Linux machine has none of ${linuxMachineIdFiles.join(", ")}: the fingerprint has nothing to derive from`)
}

describe("machineFingerprint (Linux)", () => {
  it("is the SHA-256 of the product and the OS machine id, stable, per product, and never the raw id", async () => {
    const raw = osMachineId()
    expect(await machineId()).toBe(raw)
    const fingerprint = await machineFingerprint({ productId: 42 })
    expect(fingerprint).toBe(createHash("sha256").update(`lm-fingerprint:v1:42:${raw}`).digest("hex"))
    expect(fingerprint).toMatch(/^[0-9a-f]{64}$/)
    expect(await machineFingerprint({ productId: 42 })).toBe(fingerprint)
    expect(await machineFingerprint({ productId: 43 })).not.toBe(fingerprint)
    expect(fingerprint).not.toContain(raw)
    expect(fingerprintOf(42, "another-machine")).not.toBe(fingerprint)
  })
})

describe("fileStorage", () => {
  it("keeps values across instances (processes), in a file only the user can read", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "lm-client-")), "nested", "license.json")
    const first = fileStorage(path)
    expect(await first.get("a")).toBeUndefined()
    await Promise.all([first.set("a", "1"), first.set("b", "2")])
    await first.delete("b")
    const second = fileStorage(path)
    expect(await second.get("a")).toBe("1")
    expect(await second.get("b")).toBeUndefined()
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(statSync(join(path, "..")).mode & 0o777).toBe(0o700)
  })
})
