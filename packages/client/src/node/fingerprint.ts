/**
 * A stable device fingerprint from the operating system's machine id, hashed with the product id (SHA-256 hex)
 * so the raw id never leaves the device and two products see two unrelated fingerprints. Linux:
 * `/etc/machine-id`, else `/var/lib/dbus/machine-id`; macOS: `IOPlatformUUID` from `ioreg`; Windows:
 * `MachineGuid` from the registry.
 */
import { execFile } from "node:child_process"
import { createHash } from "node:crypto"
import { readFile } from "node:fs/promises"
import { promisify } from "node:util"

const run = promisify(execFile)

/** Where the machine id is read on Linux, in order. */
export const linuxMachineIdFiles = ["/etc/machine-id", "/var/lib/dbus/machine-id"] as const

const firstFile = async (paths: ReadonlyArray<string>): Promise<string | undefined> => {
  for (const path of paths) {
    try {
      const id = (await readFile(path, "utf8")).trim()
      if (id !== "") return id
    } catch {
      // next one
    }
  }
  return undefined
}

/** The operating system's machine id, raw (do not send it anywhere: hash it, as {@link machineFingerprint} does). */
export const machineId = async (platform: NodeJS.Platform = process.platform): Promise<string> => {
  let id: string | undefined
  if (platform === "darwin") {
    const { stdout } = await run("ioreg", ["-rd1", "-c", "IOPlatformExpertDevice"])
    id = /"IOPlatformUUID"\s*=\s*"([^"]+)"/.exec(stdout)?.[1]
  } else if (platform === "win32") {
    const { stdout } = await run("reg", ["query", "HKLM\\SOFTWARE\\Microsoft\\Cryptography", "/v", "MachineGuid"])
    id = /MachineGuid\s+REG_SZ\s+(\S+)/.exec(stdout)?.[1]
  } else {
    id = await firstFile(linuxMachineIdFiles)
  }
  if (id === undefined || id === "") throw new Error(`no machine id found on this system (${platform})`)
  return id
}

/** The fingerprint of `rawId` for `productId`: SHA-256 hex of `lm-fingerprint:v1:{productId}:{rawId}`. */
export const fingerprintOf = (productId: string | number, rawId: string): string =>
  createHash("sha256").update(`lm-fingerprint:v1:${productId}:${rawId}`).digest("hex")

/** This device's fingerprint for `productId`: stable across runs, derived from the OS machine id. */
export const machineFingerprint = async (options: { readonly productId: string | number }): Promise<string> =>
  fingerprintOf(options.productId, await machineId())
