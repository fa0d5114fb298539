/**
 * The browser console (CONTRACT §19): the static files of `apps/console` (built by `npm run build` into
 * `apps/console/dist`) served at `{base_url}/console/`, beside the API and outside `LM_REST_ROOT`.
 *
 * - `GET /console` redirects to `/console/`; `/console/assets/*` are the built files, whose names carry a hash of
 *   their content, so they are cached for a year (`immutable`); every other path under `/console/` is the
 *   console's page (`index.html`: its routes live in the browser), revalidated on each use (`no-cache`, `ETag`).
 * - Every answer carries a strict `Content-Security-Policy` (scripts and styles from the console's own files only,
 *   no inline script, requests to this origin only, `frame-ancestors 'none'`) and `X-Content-Type-Options`.
 * - The page learns where the API is from a `<meta name="lm-rest-root">` the server fills in (no inline script).
 * - `LM_CONSOLE=off` serves none of it (404 `rest_no_route`); `LM_CONSOLE_DIR` names another folder of built files.
 *
 * The files are read on the first request and kept (a missing build is looked for again on the next request).
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"
import { Config, Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import { envelope } from "./Responses.js"
import { HttpSettings, parseSwitch, readSetting } from "./Settings.js"

/** Where the console is served. */
export const consolePath = "/console"

/** The built console of this repository (`apps/console/dist`), from `packages/http/{src,dist}/server/`. */
export const defaultConsoleDir = fileURLToPath(new URL("../../../../apps/console/dist/", import.meta.url))

/** The policy of every console answer: nothing but the console's own files, no inline script, never framed. */
export const consoleContentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

const securityHeaders = {
  "content-security-policy": consoleContentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin"
}

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json",
  ".map": "application/json",
  ".txt": "text/plain; charset=utf-8"
}

/** One file as served: its bytes, a gzipped copy when that is smaller, its type and entity tag. */
interface ServedFile {
  readonly body: Uint8Array
  readonly gzip: Uint8Array | undefined
  readonly type: string
  readonly etag: string
}

const served = (body: Uint8Array, type: string): ServedFile => {
  const compressible = !type.startsWith("image/png")
  const gzip = compressible ? gzipSync(body) : undefined
  return {
    body,
    gzip: gzip !== undefined && gzip.length < body.length ? gzip : undefined,
    type,
    etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`
  }
}

const escapeAttribute = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** The built console in memory: `index.html` (with the API's place filled in) and `assets/*` by name. */
interface ConsoleFiles {
  readonly page: ServedFile
  readonly assets: ReadonlyMap<string, ServedFile>
}

const readFiles = (dir: string, restRoot: string): ConsoleFiles | undefined => {
  const indexFile = path.join(dir, "index.html")
  if (!fs.existsSync(indexFile)) return undefined
  const html = fs.readFileSync(indexFile, "utf8")
    .replace(/<meta name="lm-rest-root" content="[^"]*">/, `<meta name="lm-rest-root" content="${escapeAttribute(restRoot)}">`)
  const assets = new Map<string, ServedFile>()
  const assetDir = path.join(dir, "assets")
  if (fs.existsSync(assetDir)) {
    for (const name of fs.readdirSync(assetDir)) {
      const file = path.join(assetDir, name)
      if (!fs.statSync(file).isFile()) continue
      assets.set(name, served(fs.readFileSync(file), contentTypes[path.extname(name)] ?? "application/octet-stream"))
    }
  }
  return { page: served(new TextEncoder().encode(html), contentTypes[".html"]!), assets }
}

/** The answer of a file: 304 when `If-None-Match` names it, gzipped when the browser accepts it. */
const answer = (request: HttpServerRequest, file: ServedFile, cacheControl: string) => {
  const headers = { ...securityHeaders, "cache-control": cacheControl, etag: file.etag, vary: "accept-encoding" }
  if ((request.headers["if-none-match"] ?? "").split(",").some((tag) => tag.trim() === file.etag)) {
    return HttpServerResponse.empty({ status: 304, headers })
  }
  const gzip = file.gzip !== undefined && /\bgzip\b/.test(request.headers["accept-encoding"] ?? "")
  return HttpServerResponse.uint8Array(gzip ? file.gzip! : file.body, {
    contentType: file.type,
    headers: gzip ? { ...headers, "content-encoding": "gzip" } : headers
  })
}

/** An asset's name from its (percent-encoded) path; a malformed encoding names no asset. */
const assetName = (encoded: string): string => {
  try {
    return decodeURIComponent(encoded)
  } catch {
    return ""
  }
}

const notFound = (message: string) => envelope(404, "rest_no_route", message, undefined, securityHeaders)

/** The console's routes on `dir` (the API is at `restRoot`). */
export const layerConsoleRoutes = (options: { readonly dir: string; readonly restRoot: string }) => {
  let files: ConsoleFiles | undefined
  const load = () => files ??= readFiles(options.dir, options.restRoot)
  const assetPrefix = `${consolePath}/assets/`
  const serve = (request: HttpServerRequest) =>
    Effect.sync(() => {
      const built = load()
      if (built === undefined) {
        return notFound(`The console is not built: run npm run build (it writes ${options.dir}).`)
      }
      const pathname = request.url.split("?")[0]!
      if (pathname.startsWith(assetPrefix)) {
        const asset = built.assets.get(assetName(pathname.slice(assetPrefix.length)))
        return asset === undefined
          ? notFound("No such file in the console.")
          : answer(request, asset, "public, max-age=31536000, immutable")
      }
      return answer(request, built.page, "no-cache")
    })
  // One route for `/console` and everything under it (the router takes `/console/*` to declare `/console` too).
  return HttpRouter.add("GET", `${consolePath}*`, (request) => {
    const [pathname, query] = request.url.split(/\?(.*)/s)
    if (pathname === consolePath) {
      return Effect.succeed(HttpServerResponse.redirect(`${consolePath}/${query === undefined ? "" : `?${query}`}`, {
        status: 308,
        headers: securityHeaders
      }))
    }
    return pathname!.startsWith(`${consolePath}/`) ? serve(request) : Effect.succeed(notFound("No route was found matching the URL and request method."))
  })
}

/**
 * The console's routes as the environment says: `LM_CONSOLE` (default on; `off` serves none), `LM_CONSOLE_DIR`
 * (default the repository's `apps/console/dist`). A console that is not built is logged once at start (info: the
 * API works without it). A function: each server reads its own environment (a layer value is built once and
 * shared).
 */
export const layerConsoleFromEnv = () => Layer.unwrap(Effect.gen(function*() {
  const setting = yield* Config.String("LM_CONSOLE").pipe(Config.withDefault(""))
  const enabled = yield* readSetting("LM_CONSOLE", () => parseSwitch(setting, true))
  if (!enabled) return Layer.empty
  const dirSetting = yield* Config.String("LM_CONSOLE_DIR").pipe(Config.withDefault(""))
  const dir = dirSetting === "" ? defaultConsoleDir : path.resolve(dirSetting)
  const { restRoot } = yield* HttpSettings
  if (!fs.existsSync(path.join(dir, "index.html"))) {
    yield* Effect.logInfo(`The console is not built (no ${path.join(dir, "index.html")}): run npm run build; /console/ answers 404 until then.`)
  }
  return layerConsoleRoutes({ dir, restRoot })
}))
