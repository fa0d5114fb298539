/**
 * A raw POST through node:http, so that a test controls the framing: `chunked` sends the body without a length
 * (which the fast path leaves to the HttpApi path), and the content type is sent exactly as given.
 */
import { request as httpRequest } from "node:http"
import type { TestApp } from "./App.js"

export const rawPost = (
  app: TestApp,
  path: string,
  body: string,
  contentType: string,
  options: { readonly chunked?: boolean; readonly auth?: string; readonly headers?: Record<string, string> } = {}
) =>
  new Promise<{ readonly status: number; readonly headers: Record<string, string | Array<string> | undefined>; readonly body: any }>((resolve, reject) => {
    const headers: Record<string, string> = { ...options.headers, "content-type": contentType }
    if (!options.chunked) headers["content-length"] = String(Buffer.byteLength(body))
    if (options.auth !== undefined) headers.authorization = options.auth
    const req = httpRequest(`${app.apiBase}${path}`, { method: "POST", headers, agent: false }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) }))
    })
    req.on("error", reject)
    // write() then end(): with no length given, Node sends the body chunked (end(body) alone would set the length).
    req.write(body)
    req.end()
  })
