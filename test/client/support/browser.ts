/**
 * The browser side of the client tests: `@lm/client` bundled for the browser with esbuild (from the TypeScript
 * sources, platform `browser`, so a node: import anywhere in what the main entry reaches fails the bundle),
 * served by a loopback static server (another origin than the lm server's: the page reaches the API through
 * CORS), and Debian's Chromium driven by playwright-core.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { build } from "esbuild"
import { type Browser, chromium } from "playwright-core"

const packages = fileURLToPath(new URL("../../../packages/", import.meta.url))
const sources: Record<string, string> = {
  "@lm/client": "client/src/index.ts",
  "@lm/api": "api/src/index.ts",
  "@lm/domain/core": "domain/src/core.ts",
  "@lm/domain/verify": "domain/src/verify/index.ts"
}

/** Bundles the SDK's main entry for browsers; resolves with the JavaScript. */
export const bundleSdk = async (): Promise<string> => {
  const result = await build({
    entryPoints: [fileURLToPath(new URL("./browser-entry.ts", import.meta.url))],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "es2022",
    logLevel: "silent",
    plugins: [{
      name: "lm-sources",
      setup(b) {
        b.onResolve({ filter: /^@lm\// }, (args) => {
          const source = sources[args.path]
          if (source === undefined) return { errors: [{ text: `${args.path} is not a browser entry of this repository` }] }
          return { path: join(packages, source) }
        })
      }
    }]
  })
  return result.outputFiles[0]!.text
}

/** The page's origin server: `/` the page, `/sdk.js` the bundle; the API is on another origin. */
export interface PageServer {
  readonly origin: string
  readonly close: () => Promise<void>
}

export const servePage = async (sdk: string): Promise<PageServer> => {
  // The bundle and the page, written to a temporary folder and served from it.
  const dir = mkdtempSync(join(tmpdir(), "lm-browser-"))
  writeFileSync(join(dir, "sdk.js"), sdk)
  writeFileSync(
    join(dir, "index.html"),
    `<!doctype html><meta charset="utf-8"><title>lm client</title><script type="module" src="/sdk.js"></script>`
  )
  const server: Server = createServer((req, res) => {
    const url = req.url ?? "/"
    if (url === "/sdk.js") {
      res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" })
      return void res.end(readFileSync(join(dir, "sdk.js")))
    }
    if (url === "/" || url.startsWith("/?")) {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
      return void res.end(readFileSync(join(dir, "index.html")))
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections()
      rmSync(dir, { recursive: true, force: true })
      return new Promise((resolve) => server.close(() => resolve()))
    }
  }
}

/** Debian's `chromium` package; CI installs it (.ci/run). */
export const chromiumPath = "/usr/bin/chromium"

/** Launches headless Chromium, or fails saying how to install it. */
export const launchChromium = async (): Promise<Browser> => {
  if (!existsSync(chromiumPath)) {
    throw new Error(`the browser test needs Chromium at ${chromiumPath}: apt-get install -y chromium (.ci/run does it)`)
  }
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync"
    ]
  })
}
