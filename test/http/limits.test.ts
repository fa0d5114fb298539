/**
 * Issue 19, connection limits and timeouts: the real server (`lm serve`) as a child process, raw sockets.
 * Headers that never end: 408 `rest_request_timeout` and the socket closed within the headers timeout. A body that
 * never ends, on the fast path and on the HttpApi path: 408 in the envelope with `Connection: close`, then closed.
 * One address holding its cap of sockets gets the next one closed at once while another address is still served;
 * the server's cap likewise; a freed socket makes room again. Clients that time out and never read (so never see
 * the server's FIN, nor close their side) do not keep their connection slots after the 408.
 */
import * as net from "node:net"
import { afterEach, expect, it } from "vitest"
import { adminKey } from "../../packages/http/test/support/App.js"
import { eventually } from "../support/eventually.js"
import { type ServerProcess, spawnServer, waitForOutput } from "./support/Child.js"
import { connect, type RawConnection, requestText } from "./support/RawHttp.js"

const servers: Array<ServerProcess> = []
const sockets: Array<RawConnection> = []
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy()
  for (const server of servers.splice(0)) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
})

const start = async (env: Record<string, string>) => {
  const server = spawnServer({
    LM_STORAGE: "memory",
    PORT: "0",
    HOST: "127.0.0.1",
    LM_SWEEP_INTERVAL: "0",
    LM_RATE_LIMIT: "off",
    LM_BOOTSTRAP_CONSUMER_KEY: adminKey.consumerKey,
    LM_BOOTSTRAP_CONSUMER_SECRET: adminKey.consumerSecret,
    ...env
  })
  servers.push(server)
  const [, apiBase] = await waitForOutput(server, /Listening on (http:\/\/\S+)/)
  return { path: new URL(apiBase!).pathname, port: Number(new URL(apiBase!).port) }
}

const open = async (port: number, localAddress?: string) => {
  const socket = await connect(port, localAddress === undefined ? {} : { localAddress })
  sockets.push(socket)
  return socket
}

/** Expects the 408 envelope with `Connection: close`, then the socket closed by the server. */
const expectTimedOut = async (socket: RawConnection) => {
  const answer = await socket.next()
  expect(answer.status).toBe(408)
  expect(JSON.parse(answer.body)).toMatchObject({ success: false, code: "rest_request_timeout", data: { status: 408 } })
  expect(answer.headers.connection).toBe("close")
  expect(answer.headers["x-request-id"]).toMatch(/\S/)
  await socket.closed
}

it("answers 408 rest_request_timeout and closes the socket when headers or a body never end (both request paths)", async () => {
  const { path, port } = await start({ LM_HEADERS_TIMEOUT_SECONDS: "1", LM_BODY_TIMEOUT_SECONDS: "1" })
  const json = { "content-type": "application/json" }

  const loris = await open(port)
  loris.write(`GET ${path}/health HTTP/1.1\r\nhost: localhost\r\nx-slow: `)
  // The fast path's request (Content-Length) and the HttpApi path's (chunked), each with a body that stops.
  const fast = await open(port)
  fast.write(requestText("POST", `${path}/validate`, { ...json, "content-length": "100" }) + `{"license_key":`)
  const stack = await open(port)
  stack.write(requestText("POST", `${path}/validate`, { ...json, "transfer-encoding": "chunked" }) + `5\r\n{"lic\r\n`)

  await Promise.all([expectTimedOut(loris), expectTimedOut(fast), expectTimedOut(stack)])

  // A request that arrives in time on a new connection is answered as usual.
  const prompt = await open(port)
  prompt.write(requestText("GET", `${path}/health`))
  expect((await prompt.next()).status).toBe(200)
}, 60_000)

it("closes a connection over the per-address cap or the server's cap at once; others are still served", async () => {
  const { path, port } = await start({ LM_MAX_CONNECTIONS: "4", LM_MAX_CONNECTIONS_PER_IP: "2" })
  const health = requestText("GET", `${path}/health`)
  /** A connection that was answered (so the server counts it), kept open. */
  const held = async (localAddress: string) => {
    const socket = await open(port, localAddress)
    socket.write(health)
    expect((await socket.next()).status).toBe(200)
    return socket
  }
  /** A connection the server closes without answering. */
  const expectRefused = async (localAddress: string) => {
    const socket = await open(port, localAddress)
    socket.write(health)
    await expect(socket.next()).rejects.toThrow(/socket closed/)
  }

  const first = await held("127.0.0.1")
  await held("127.0.0.1")
  await expectRefused("127.0.0.1")
  // Another address still gets in, up to the server's cap of 4 …
  await held("127.0.0.2")
  await held("127.0.0.2")
  // … over which every address is refused.
  await expectRefused("127.0.0.3")

  // A freed socket makes room again.
  first.destroy()
  await eventually(async () => {
    await held("127.0.0.1")
  })
}, 60_000)

it("destroys the sockets of 408s that are never read: holders of every slot free them, a new client is served", async () => {
  const { path, port } = await start({
    LM_MAX_CONNECTIONS: "6",
    LM_MAX_CONNECTIONS_PER_IP: "3",
    LM_HEADERS_TIMEOUT_SECONDS: "1",
    LM_BODY_TIMEOUT_SECONDS: "1"
  })
  const json = { "content-type": "application/json" }
  const holders: Array<net.Socket> = []
  /** Three sockets from each of two addresses (every slot) that send `texts` in turn, then read nothing, ever. */
  const holdEverySlot = async (texts: ReadonlyArray<string>) => {
    for (const localAddress of ["127.0.0.1", "127.0.0.2"]) {
      for (let i = 0; i < 3; i++) {
        // Paused before it connects: it never reads the 408 nor the FIN after it, and keeps its side open.
        const socket = net.connect({ host: "127.0.0.1", port, localAddress }).pause()
        socket.on("error", () => {})
        holders.push(socket)
        await new Promise<void>((resolve) => socket.once("connect", resolve))
        socket.write(texts[i % texts.length]!)
      }
    }
  }
  /** Once the 408s are out the holders' sockets are gone: a new client from either address, or a third, is served. */
  const expectServed = async () => {
    for (const localAddress of ["127.0.0.1", "127.0.0.2", "127.0.0.3"]) {
      await eventually(async () => {
        const fresh = await open(port, localAddress)
        fresh.write(requestText("GET", `${path}/health`))
        expect((await fresh.next()).status).toBe(200)
        fresh.destroy()
      }, { timeout: 10_000, interval: 100 })
    }
  }
  try {
    // Headers that never end.
    await holdEverySlot([`GET ${path}/health HTTP/1.1\r\nhost: localhost\r\nx-slow: `])
    await expectServed()
    // Bodies that stop, on the fast path (Content-Length) and the HttpApi path (chunked).
    await holdEverySlot([
      requestText("POST", `${path}/validate`, { ...json, "content-length": "100" }) + `{"license_key":`,
      requestText("POST", `${path}/validate`, { ...json, "transfer-encoding": "chunked" }) + `5\r\n{"lic\r\n`
    ])
    await expectServed()
  } finally {
    for (const socket of holders) socket.destroy()
  }
}, 60_000)
