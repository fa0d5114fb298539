/** Runs the test API as a process, as `lm serve` would run the real one: `node --import ./ts-resolve.mjs serveEcho.ts`. */
import { runServer } from "../../../../apps/server/src/Main.js"
import { echoServerLayer } from "./TestServer.js"

runServer(echoServerLayer({}, { host: "127.0.0.1", port: 0 }))
