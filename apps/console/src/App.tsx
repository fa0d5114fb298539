/**
 * The console's frame: the sign-in page until a key is signed in, then the menu, who is signed in, and the page of
 * the current path. A 401 from any call (a revoked key, a restarted server with other keys) signs out and returns
 * to the sign-in page, which comes back to where the person was.
 */
import { useEffect, useMemo, useState } from "preact/hooks"
import { makeApi, setUnauthorizedHandler } from "./api.js"
import { NotFound } from "./pages/NotFound.js"
import { routes } from "./pages/index.js"
import { SignIn } from "./pages/SignIn.js"
import { Link, match, navigate, queryString, useLocation } from "./router.js"
import { clearSession, loadSession, saveSession, type Session, truncatedKey } from "./session.js"
import { type Signed, SignedContext } from "./ui.js"

const signInPath = "/sign-in"

export const App = () => {
  const [session, setSession] = useState<Session | undefined>(loadSession)
  const [notice, setNotice] = useState<string | undefined>(undefined)
  const [menuOpen, setMenuOpen] = useState(false)
  const { path, query } = useLocation()

  const signOut = (message?: string) => {
    clearSession()
    setSession(undefined)
    setNotice(message)
    const here = `${location.pathname.slice("/console".length) || "/"}${location.search}`
    navigate(`${signInPath}${message === undefined || here.startsWith(signInPath) ? "" : queryString({ next: here })}`, { replace: message !== undefined })
  }

  useEffect(() => {
    setUnauthorizedHandler(() => {
      if (loadSession() !== undefined) signOut("The server did not accept this key any more: sign in again.")
    })
  }, [])

  const signed = useMemo<Signed | undefined>(() =>
    session === undefined ? undefined : {
      session,
      api: makeApi(session),
      canWrite: session.scope !== "read",
      signOut
    }, [session])

  // Not signed in: every path shows the sign-in page, which returns to that path.
  useEffect(() => {
    if (session === undefined && path !== signInPath) navigate(`${signInPath}${queryString({ next: `${path}${location.search}` })}`, { replace: true })
    if (session !== undefined && path === signInPath) navigate(query.get("next") ?? "/", { replace: true })
  }, [session, path])

  // A new page: the menu closes, and focus moves to the page's title for keyboard and screen reader users.
  useEffect(() => {
    setMenuOpen(false)
    document.getElementById("page-title")?.focus({ preventScroll: true })
  }, [path])

  if (signed === undefined) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(next) => {
          saveSession(next)
          setNotice(undefined)
          setSession(next)
        }}
      />
    )
  }

  const visible = routes.filter((r) => r.needs === undefined || signed.session.scope === r.needs)
  let page = <NotFound />
  let title = "Not found"
  for (const route of visible) {
    const params = match(route.path, path)
    if (params !== undefined) {
      const Component = route.component
      page = <Component params={params} />
      title = route.nav ?? visible.find((r) => r.nav !== undefined && route.path.startsWith(r.path) && r.path !== "/")?.nav ?? "Console"
      break
    }
  }
  document.title = `${title} · Licensing console`
  const current = (navPath: string) => navPath === "/" ? path === "/" : path === navPath || path.startsWith(`${navPath}/`)

  return (
    <SignedContext.Provider value={signed}>
      <a class="skip" href="#main">Skip to the page</a>
      <header class="top">
        <Link href="/" class="brand">Licensing console</Link>
        <button type="button" class="menu-button" aria-expanded={menuOpen} aria-controls="menu" onClick={() => setMenuOpen(!menuOpen)}>Menu</button>
        <nav id="menu" class={menuOpen ? "open" : undefined} aria-label="Pages">
          <ul>
            {visible.filter((r) => r.nav !== undefined).map((r) => (
              <li key={r.path}><Link href={r.path} aria-current={current(r.path) ? "page" : undefined}>{r.nav}</Link></li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span title="The API key this tab is signed in with">
            <code>{truncatedKey(signed.session.consumerKey)}</code> · <span data-scope={signed.session.scope}>{signed.session.scope === "read" ? "read only" : signed.session.scope}</span>
          </span>
          <button type="button" onClick={() => signOut()}>Sign out</button>
        </div>
      </header>
      <main id="main">{page}</main>
    </SignedContext.Provider>
  )
}
