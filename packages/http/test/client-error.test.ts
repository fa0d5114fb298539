/**
 * The answer to a client error (a 408 of the headers or body timeout, a 400 or 413 of Node's parser) does not
 * leave its socket half-closed: the socket is destroyed once the answer has been handed to the network, or after
 * a short bound when it never is (a client that reads nothing and whose buffers are full).
 */
import { Duplex } from "node:stream"
import { afterEach, beforeEach, expect, it, vi } from "vitest"
import { answerClientError, clientErrorFlushMillis } from "../src/server/Http.js"

beforeEach(() => {
  vi.useFakeTimers()
})
afterEach(() => {
  vi.useRealTimers()
})

const timeout = () => Object.assign(new Error("The request did not arrive in time."), { code: "ERR_HTTP_REQUEST_TIMEOUT" })

/** A socket whose writes are taken at once (`flushes`), or never (a peer that reads nothing). */
const socket = (flushes: boolean) => {
  const written: Array<string> = []
  const duplex = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      written.push(chunk.toString("utf8"))
      if (flushes) done()
    }
  })
  return { duplex, written }
}

it("destroys the socket as soon as the 408 is written", async () => {
  const { duplex, written } = socket(true)
  answerClientError(timeout(), duplex)
  await vi.waitFor(() => expect(duplex.destroyed).toBe(true))
  expect(written.join("")).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n[\s\S]*"code":"rest_request_timeout"/)
})

it("destroys the socket after the bound when the 408 never flushes", async () => {
  const { duplex, written } = socket(false)
  answerClientError(timeout(), duplex)
  expect(written.join("")).toMatch(/^HTTP\/1\.1 408 /)
  await vi.advanceTimersByTimeAsync(clientErrorFlushMillis - 1)
  expect(duplex.destroyed).toBe(false)
  await vi.advanceTimersByTimeAsync(1)
  expect(duplex.destroyed).toBe(true)
})
