/**
 * A {@link Storage} in one JSON file, for desktop and server applications: written whole to a temporary file
 * and renamed over the old one (a crash never leaves half a file), private to the user (file 0600, a created
 * folder 0700).
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises"
import { dirname } from "node:path"
import type { Storage } from "../storage.js"

export const fileStorage = (path: string): Storage => {
  const read = async (): Promise<Record<string, string>> => {
    let text: string
    try {
      text = await readFile(path, "utf8")
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return {}
      throw error
    }
    try {
      const parsed: unknown = JSON.parse(text)
      return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed as Record<string, string> : {}
    } catch {
      // A damaged file holds nothing usable: the next validation online writes it anew.
      return {}
    }
  }
  const write = async (entries: Record<string, string>) => {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 })
    const temporary = `${path}.${process.pid}.tmp`
    await writeFile(temporary, JSON.stringify(entries), { mode: 0o600 })
    await rename(temporary, path)
  }
  // One change at a time within this process, so two writers never lose each other's key.
  let queue: Promise<unknown> = Promise.resolve()
  const serial = <A>(f: () => Promise<A>): Promise<A> => {
    const next = queue.then(f)
    queue = next.catch(() => undefined)
    return next
  }
  return {
    get: (key) => serial(async () => (await read())[key]),
    set: (key, value) => serial(async () => write({ ...(await read()), [key]: value })),
    delete: (key) =>
      serial(async () => {
        const { [key]: _removed, ...rest } = await read()
        await write(rest)
      })
  }
}
