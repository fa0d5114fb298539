/**
 * Client-side routes under `/console/` (the server answers every one of them with the page): the History API,
 * links that navigate without reloading, and list filters kept in the query string so that a link can be shared.
 */
import type { ComponentChildren } from "preact"
import { useEffect, useState } from "preact/hooks"

/** Where the console is served. */
export const base = "/console"

const listeners = new Set<() => void>()

/** The console's path (`/licenses/ABCD-…`) and query of the current location. */
export const currentPath = (): string => location.pathname.slice(base.length) || "/"

/** Goes to a console path (with its query), adding a history entry unless `replace`. */
export const navigate = (to: string, options: { readonly replace?: boolean } = {}): void => {
  const url = `${base}${to}`
  if (url === `${location.pathname}${location.search}`) return
  if (options.replace === true) history.replaceState(null, "", url)
  else history.pushState(null, "", url)
  for (const listener of listeners) listener()
  if (options.replace !== true) window.scrollTo(0, 0)
}

/** Re-renders on every navigation; returns the path and the query. */
export const useLocation = (): { readonly path: string; readonly query: URLSearchParams } => {
  const [, setVersion] = useState(0)
  useEffect(() => {
    const changed = () => setVersion((v) => v + 1)
    listeners.add(changed)
    window.addEventListener("popstate", changed)
    return () => {
      listeners.delete(changed)
      window.removeEventListener("popstate", changed)
    }
  }, [])
  return { path: currentPath(), query: new URLSearchParams(location.search) }
}

/** The parameters of `path` when it matches `pattern` (`/licenses/:key`), else undefined. */
export const match = (pattern: string, path: string): Record<string, string> | undefined => {
  const want = pattern.split("/")
  const got = path.replace(/\/+$/, "").split("/")
  if (pattern === "/") return path === "/" || path === "" ? {} : undefined
  if (want.length !== got.length) return undefined
  const params: Record<string, string> = {}
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!
    if (w.startsWith(":")) params[w.slice(1)] = decodeURIComponent(got[i]!)
    else if (w !== got[i]) return undefined
  }
  return params
}

/** A link to a console path; a plain click navigates in place, a modified one opens as the browser would. */
export const Link = (props: {
  readonly href: string
  readonly children: ComponentChildren
  readonly class?: string
  readonly "aria-current"?: "page" | undefined
}) => {
  const { href, children } = props
  return (
    <a
      class={props.class}
      aria-current={props["aria-current"]}
      href={`${base}${href}`}
      onClick={(event) => {
        if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
        event.preventDefault()
        navigate(href)
      }}
    >
      {children}
    </a>
  )
}

/** A query string of the values that are set (empty strings and undefined are left out). */
export const queryString = (values: Readonly<Record<string, string | number | undefined>>): string => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined && value !== "") params.set(name, String(value))
  }
  const text = params.toString()
  return text === "" ? "" : `?${text}`
}

/**
 * A list's filters and page, kept in the URL: `values` from the query string, and `set(patch)` which merges a
 * patch into it (a filter change goes back to page 1 unless the patch names a page).
 */
export const useQueryState = () => {
  const { path, query } = useLocation()
  const values: Record<string, string> = Object.fromEntries(query.entries())
  const set = (patch: Readonly<Record<string, string | number | undefined>>) => {
    const next = { ...values, ...("page" in patch ? {} : { page: undefined }), ...patch }
    navigate(`${path}${queryString(next)}`)
  }
  return { values, set }
}
