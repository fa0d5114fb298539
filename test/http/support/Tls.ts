/**
 * TLS for tests: a self-signed certificate for `localhost` and 127.0.0.1 made at test time with the `openssl`
 * command line, and requests over HTTPS that trust it.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as https from "node:https"
import * as os from "node:os"
import * as path from "node:path"

/** A certificate and its key, as PEM files in a new temporary folder. */
export interface TestCertificate {
  readonly dir: string
  readonly certFile: string
  readonly keyFile: string
  readonly cert: string
  readonly remove: () => void
}

/** Makes a P-256 certificate valid one day for `localhost` and 127.0.0.1. */
export const makeCertificate = (): TestCertificate => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lm-tls-"))
  const certFile = path.join(dir, "cert.pem")
  const keyFile = path.join(dir, "key.pem")
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-days", "1",
    "-keyout", keyFile, "-out", certFile
  ], { stdio: "ignore" })
  return { dir, certFile, keyFile, cert: fs.readFileSync(certFile, "utf8"), remove: () => fs.rmSync(dir, { recursive: true, force: true }) }
}

/** One answer over HTTPS. */
export interface TlsAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string | Array<string> | undefined>>
  readonly body: any
}

/** A request over HTTPS to `url`, trusting only `ca`, with a JSON body if given. */
export const httpsRequest = (url: string, ca: string, options: { readonly method?: string; readonly headers?: Record<string, string>; readonly body?: unknown } = {}): Promise<TlsAnswer> =>
  new Promise((resolve, reject) => {
    const text = options.body === undefined ? undefined : JSON.stringify(options.body)
    const request = https.request(url, {
      method: options.method ?? "GET",
      ca,
      agent: false,
      headers: { ...(text === undefined ? {} : { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) }), ...options.headers }
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8")
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: body === "" ? undefined : JSON.parse(body) })
      })
    })
    request.on("error", reject)
    request.end(text)
  })
