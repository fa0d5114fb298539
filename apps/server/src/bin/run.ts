/**
 * What `lm` runs once its entry (`lm.ts`) has checked the Node.js version: the command line of `../cli/`.
 */
import cluster from "node:cluster"
// The modules themselves, not the package index: that loads every module, NodeRedis (and node-redis) among them.
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect } from "effect"
import { runCli } from "../cli/Cli.js"
import { teardown } from "../Main.js"

// Everything the service writes (PGlite's files, the master key) is for its own user only: folders 0700, files 0600.
process.umask(0o077)

// A worker of `LM_WORKERS` (`../Cluster.ts`) whose command has ended (a refused start) lets go of its channel to
// the primary, which would otherwise keep it running.
const released = Effect.sync(() => {
  if (cluster.isWorker && process.connected) process.disconnect()
})

NodeRuntime.runMain(runCli(process.argv.slice(2)).pipe(Effect.ensuring(released), Effect.provide(NodeServices.layer)), { teardown })
