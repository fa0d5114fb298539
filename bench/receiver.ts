/**
 * The webhook receiver of bench/webhooks.ts, in its own process so that the driver can run it at the lowest CPU
 * priority (`nice -n 19`): on this one machine it stands in for an integrator's server elsewhere, and takes only
 * CPU that the server under test and the load generator leave. It answers every POST 200 and counts it; GET
 * /stats answers `{count, last, connections}` (deliveries received, when the last arrived in epoch ms, TCP
 * connections opened to it). Prints `{"port": N}` on stdout once listening.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

const stats = { count: 0, last: Date.now(), connections: 0 }
const server = createServer((req, res) => {
  if (req.method === "GET" && req.url === "/stats") {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(stats))
    return
  }
  req.resume()
  req.on("end", () => {
    stats.count++
    stats.last = Date.now()
    res.writeHead(200).end("ok")
  })
})
server.on("connection", () => stats.connections++)
server.listen(0, "127.0.0.1", () => process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`))
process.on("SIGTERM", () => server.close(() => process.exit(0)))
