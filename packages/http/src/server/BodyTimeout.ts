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
 * The total body timeout of `server`'s requests: the returned function is called once a request's headers are in.
 * A sweep every quarter of `millis` (at most every second) answers 408 to each request whose body is still
 * incomplete past its deadline, unless a route took it over: no timer or listener per request on the hot path, as
 * with Node's own request timeout.
 *
 * A request is only noted until the end of the event loop's turn that read its headers; then only the ones whose
 * body has not fully arrived are kept for the sweep. A small body comes in the same read as the headers, so it is
 * complete by then: its request and response are not held until the next sweep, which made every request outlive
 * a scavenge and get promoted to the old generation (GC's promotion rate 99.5 %, long scavenges: bench/README.md).
 */
export const makeBodyDeadlines = (server: Server, millis: number): ((request: IncomingMessage) => void) => {
  const pending = new Map<IncomingMessage, number>()
  /** The requests noted in this turn of the event loop, and their deadline (one clock read per turn). */
  let fresh: Array<IncomingMessage> = []
  let freshDeadline = 0
  const settle = () => {
    const noted = fresh
    fresh = []
    for (const request of noted) {
      if (!request.complete && !request.destroyed) pending.set(request, freshDeadline)
    }
  }
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
    if (request.complete) return
    if (fresh.length === 0) {
      freshDeadline = Date.now() + millis
      setImmediate(settle)
    }
    fresh.push(request)
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
