/**
 * The time bound of request bodies, per route like the body limit (CONTRACT §12). Every request whose body has not
 * fully arrived when its headers are in gets `LM_BODY_TIMEOUT_SECONDS` more for it, in all: then 408
 * `rest_request_timeout` and the socket closed (slow-loris protection), answered like Node's own timeouts
 * (`answerClientError`, through the server's `clientError` event). A route that bounds its body's time itself
 * takes the request over ({@link takeOverBodyTimeout}): the release upload, whose artifact may take long over a
 * slow link, is cut off when no byte arrives for `LM_UPLOAD_IDLE_TIMEOUT_SECONDS` ({@link idleTimer}) or when it is
 * not done within `LM_UPLOAD_TIMEOUT_SECONDS`.
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

/** Answers 408 and closes the socket (the server's `clientError`, as for Node's own timeouts: `answerClientError`). */
const expire = (server: Server, request: IncomingMessage): void => {
  server.emit("clientError", requestTimeoutError(), request.socket)
}

/**
 * The total body timeout of `server`'s requests: the returned function is called once a request's headers are in
 * (nothing is kept when its body is complete already). A sweep every quarter of `millis` (at most every second)
 * answers 408 to each request whose body is still incomplete past its deadline, unless a route took it over: no
 * timer or listener per request on the hot path, as with Node's own request timeout.
 */
export const makeBodyDeadlines = (server: Server, millis: number): ((request: IncomingMessage) => void) => {
  const pending = new Map<IncomingMessage, number>()
  const sweep = () => {
    const now = Date.now()
    for (const [request, deadline] of pending) {
      if (request.complete || request.destroyed || takenOver.has(request)) pending.delete(request)
      else if (now >= deadline) {
        pending.delete(request)
        expire(server, request)
      }
    }
  }
  const timer = setInterval(sweep, Math.min(1000, Math.max(50, Math.ceil(millis / 4))))
  timer.unref()
  server.once("close", () => clearInterval(timer))
  return (request) => {
    if (!request.complete) pending.set(request, Date.now() + millis)
  }
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
