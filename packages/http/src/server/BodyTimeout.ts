/**
 * The time bound of request bodies, per route like the body limit (CONTRACT §12). Every request whose body has not
 * fully arrived when its headers are in gets `LM_BODY_TIMEOUT_SECONDS` more for it, in all: then 408
 * `rest_request_timeout` and the socket closed (slow-loris protection), answered like Node's own timeouts
 * (`answerClientError`, through the server's `clientError` event). A route that bounds its body's time itself
 * takes the request over ({@link takeOverBodyTimeout}): the release upload, whose artifact may take long over a
 * slow link, is cut off only when no byte arrives for `LM_UPLOAD_IDLE_TIMEOUT_SECONDS` ({@link idleTimer}).
 */
import type { IncomingMessage, Server } from "node:http"

/** Requests whose route bounds the body's time itself. */
const takenOver = new WeakSet<IncomingMessage>()

/** The route bounds this request's body time itself: the total body timeout no longer applies to it. */
export const takeOverBodyTimeout = (request: IncomingMessage): void => {
  takenOver.add(request)
}

/** The error Node's own request timeout raises: `clientError` answers it 408 `rest_request_timeout`. */
export const requestTimeoutError = (): Error & { readonly code: string } =>
  Object.assign(new Error("The request body did not arrive in time."), { code: "ERR_HTTP_REQUEST_TIMEOUT" })

/**
 * Starts the total body timeout of a request whose headers have arrived (nothing when its body is complete
 * already): after `millis`, unless the body is complete or a route took the request over, the server's
 * `clientError` answers 408 and the socket is closed.
 */
export const watchBody = (server: Server, request: IncomingMessage, millis: number): void => {
  if (request.complete) return
  const timer = setTimeout(() => {
    if (request.complete || takenOver.has(request)) return
    const socket = request.socket
    server.emit("clientError", requestTimeoutError(), socket)
    // The 408 is written with `end()`; a client that never closes its side must not keep the socket.
    socket.once("finish", () => socket.destroy())
  }, millis)
  request.once("close", () => clearTimeout(timer))
}

/**
 * A timer that fires `onIdle` once when `touch` has not been called for `millis` (each chunk of a body touches
 * it); `stop` ends it.
 */
export const idleTimer = (millis: number, onIdle: () => void): { readonly touch: () => void; readonly stop: () => void } => {
  let last = Date.now()
  let timer: ReturnType<typeof setTimeout> | undefined
  const arm = (delay: number) => {
    timer = setTimeout(() => {
      const quiet = Date.now() - last
      // Re-armed for the rest of the window rather than reset on every chunk (chunks come thousands a second).
      if (quiet >= millis) onIdle()
      else arm(millis - quiet)
    }, delay)
  }
  arm(millis)
  return {
    touch: () => {
      last = Date.now()
    },
    stop: () => clearTimeout(timer)
  }
}
