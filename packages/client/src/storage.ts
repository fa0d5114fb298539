/**
 * Where a licensed application keeps its offline proof between runs: the last license token, the machine
 * certificate, the public keys, the revocation list and the time floor. Pluggable: `memoryStorage()` (tests,
 * short-lived processes), `localStorageStorage()` (browsers), `fileStorage(path)` from `@lm/client/node`, or any
 * object with these three methods. Values are strings; nothing in them is secret (every token is signed, not
 * encrypted), and none is trusted without verification.
 */

/** A string key-value store; the methods may be synchronous or return Promises. */
export interface Storage {
  get(key: string): Promise<string | undefined> | string | undefined
  set(key: string, value: string): Promise<void> | void
  delete(key: string): Promise<void> | void
}

/** A storage in memory: gone when the process ends. */
export const memoryStorage = (): Storage & { readonly entries: Map<string, string> } => {
  const entries = new Map<string, string>()
  return {
    entries,
    get: (key) => entries.get(key),
    set: (key, value) => void entries.set(key, value),
    delete: (key) => void entries.delete(key)
  }
}

/** The part of the Web Storage API used here (`window.localStorage` has it). */
export interface WebStorage {
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
}

/** A storage in the browser's `localStorage` (or another Web Storage), under `prefix` (default `lm:`). */
export const localStorageStorage = (
  options: { readonly prefix?: string; readonly storage?: WebStorage } = {}
): Storage => {
  const prefix = options.prefix ?? "lm:"
  const web = (): WebStorage => {
    const storage = options.storage ?? (globalThis as { localStorage?: WebStorage }).localStorage
    if (storage === undefined) throw new Error("localStorageStorage: no localStorage in this environment")
    return storage
  }
  return {
    get: (key) => web().getItem(prefix + key) ?? undefined,
    set: (key, value) => web().setItem(prefix + key, value),
    delete: (key) => web().removeItem(prefix + key)
  }
}
