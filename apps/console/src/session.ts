/**
 * The signed-in API key, kept in the tab's session storage only (CONTRACT §19): it goes when the tab closes or
 * the person signs out, and another tab signs in on its own.
 */
import type { Credentials, Scope } from "./api.js"

/** A signed-in key: its credentials and the scope the console found it to have. */
export interface Session extends Credentials {
  readonly scope: Scope
}

const storageKey = "lm-console:session"

export const loadSession = (): Session | undefined => {
  try {
    const text = sessionStorage.getItem(storageKey)
    return text === null ? undefined : JSON.parse(text) as Session
  } catch {
    return undefined
  }
}

export const saveSession = (session: Session): void => sessionStorage.setItem(storageKey, JSON.stringify(session))

export const clearSession = (): void => sessionStorage.removeItem(storageKey)

/** `…` and the last 7 characters of a consumer key, as the API lists keys (`truncated_key`). */
export const truncatedKey = (consumerKey: string): string => `…${consumerKey.slice(-7)}`
