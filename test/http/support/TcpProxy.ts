/**
 * A TCP proxy between a client and a server (here the bundled server and PostgreSQL) that a test can cut (every
 * connection destroyed, the port closed: new connections are refused at once) and bring back on the same port,
 * or freeze (connections stay open and new ones are accepted, but no byte goes through: a frozen host) and thaw,
 * or freeze one connection only, or switch to another server (e.g. one that refuses every connection with a SQLSTATE).
 */
import * as net from "node:net"

/** A running proxy on 127.0.0.1:`port`. */
export interface TcpProxy {
  readonly port: number
  /** Destroys every connection and stops listening. */
  readonly cut: () => Promise<void>
  /** Listens again on the same port. */
  readonly restore: () => Promise<void>
  /** Holds every byte from now on, in both directions, without closing anything. */
  readonly freeze: () => void
  /** Delivers what was held and forwards again (every connection frozen alone too). */
  readonly thaw: () => void
  /**
   * Holds every byte of the one connection whose socket to the server has this local port (what the server sees
   * as the client's port, e.g. `pg_stat_activity.client_port`); false when there is none.
   */
  readonly freezeConnection: (upstreamLocalPort: number) => boolean
  /** Destroys every connection and sends the next ones to `target`, on the same port. */
  readonly retarget: (target: Target) => void
  /** Cuts for good. */
  readonly close: () => Promise<void>
}

/** Where a proxy forwards to. */
export interface Target {
  readonly host: string
  readonly port: number
}

/** Starts a proxy to `first`. */
export const startTcpProxy = async (first: Target): Promise<TcpProxy> => {
  let target = first
  const sockets = new Set<net.Socket>()
  const track = (socket: net.Socket) => {
    sockets.add(socket)
    socket.once("close", () => sockets.delete(socket))
  }
  let frozen = false
  /** Upstream sockets frozen one by one. */
  const frozenUpstreams = new Set<net.Socket>()
  const upstreams = new Set<net.Socket>()
  let held: Array<[net.Socket, Buffer]> = []
  const forward = (from: net.Socket, to: net.Socket, upstream: net.Socket) =>
    from.on("data", (chunk: Buffer) => {
      if (frozen || frozenUpstreams.has(upstream)) held.push([to, chunk])
      else if (!to.destroyed) to.write(chunk)
    })
  const serve = () =>
    net.createServer((client) => {
      const upstream = net.connect(target.port, target.host)
      track(client)
      track(upstream)
      upstreams.add(upstream)
      upstream.once("close", () => {
        upstreams.delete(upstream)
        frozenUpstreams.delete(upstream)
      })
      const destroyBoth = () => {
        client.destroy()
        upstream.destroy()
      }
      client.on("error", destroyBoth).on("close", destroyBoth)
      upstream.on("error", destroyBoth).on("close", destroyBoth)
      forward(client, upstream, upstream)
      forward(upstream, client, upstream)
    })
  const listen = (server: net.Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject)
      server.listen(port, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port))
    })

  let server: net.Server | undefined = serve()
  const port = await listen(server, 0)
  const cut = async () => {
    const closing = server
    server = undefined
    for (const socket of sockets) socket.destroy()
    if (closing !== undefined) await new Promise<void>((resolve) => closing.close(() => resolve()))
  }
  return {
    port,
    cut,
    restore: async () => {
      if (server !== undefined) return
      const next = serve()
      await listen(next, port)
      server = next
    },
    retarget: (next) => {
      target = next
      for (const socket of sockets) socket.destroy()
    },
    freeze: () => {
      frozen = true
    },
    freezeConnection: (upstreamLocalPort) => {
      for (const upstream of upstreams) {
        if (upstream.localPort === upstreamLocalPort) {
          frozenUpstreams.add(upstream)
          return true
        }
      }
      return false
    },
    thaw: () => {
      frozen = false
      frozenUpstreams.clear()
      const pending = held
      held = []
      for (const [to, chunk] of pending) if (!to.destroyed) to.write(chunk)
    },
    close: cut
  }
}
