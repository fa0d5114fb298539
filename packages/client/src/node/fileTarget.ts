/**
 * A {@link DownloadTarget} that streams an update into a file: the bytes go to a temporary file beside `path`
 * (hashed as they are written), which is renamed over `path` only once the size and SHA-256 checked out; a
 * mismatch or a broken download removes it, so `path` is either the whole verified artifact or untouched.
 */
import { createHash, randomBytes } from "node:crypto"
import { mkdir, open, rename, rm } from "node:fs/promises"
import { dirname } from "node:path"
import type { DownloadTarget } from "../updates.js"

/** Streams a download into `path`; `download` resolves with `path` once the file is in place. */
export const fileTarget = (path: string): DownloadTarget<string> => {
  const temporary = `${path}.${randomBytes(6).toString("hex")}.part`
  const hash = createHash("sha256")
  let file: Awaited<ReturnType<typeof open>> | undefined
  const opened = async () => {
    if (file === undefined) {
      await mkdir(dirname(path), { recursive: true })
      file = await open(temporary, "wx")
    }
    return file
  }
  const close = async () => {
    const handle = file
    file = undefined
    await handle?.close()
  }
  return {
    write: async (chunk) => {
      const handle = await opened()
      hash.update(chunk)
      let written = 0
      while (written < chunk.length) written += (await handle.write(chunk, written)).bytesWritten
    },
    sha256: async () => hash.copy().digest("hex"),
    keep: async () => {
      const handle = await opened()
      await handle.sync()
      await close()
      await rename(temporary, path)
      return path
    },
    discard: async () => {
      await close().catch(() => undefined)
      await rm(temporary, { force: true })
    }
  }
}
