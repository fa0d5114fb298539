#!/usr/bin/env node
/**
 * `lm`: the bundled server and its command line (CONTRACT §13). Every command uses the same store settings
 * as the server: `LM_STORAGE=memory`, `DATABASE_URL`, or PGlite in `LM_DATA_DIR` (default `./data`).
 *
 *   lm serve                                    run the HTTP server (HOST, PORT, LM_* settings)
 *   lm migrate                                  create or upgrade the store's schema
 *   lm api-keys create [--scope S] [--description D]
 *   lm api-keys list
 *   lm signing-keys rotate                      make a new current signing key; old ones stay published
 *   lm signing-keys retire <kid>                unlist an old (compromised) key: tokens it signed stop verifying
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Schema } from "effect"
import { ApiKeys, Engine, Model, Services, SigningKeys } from "@lm/domain"
import { engineOptionsFromEnv, serverLayer, storeChoiceFromEnv, storeLayer } from "../server/App.js"
import { redisUrlFromEnv } from "../server/RateLimits.js"
import { refusalMessage, runServer } from "../server/Main.js"
import { listenFromEnv } from "../server/Settings.js"
import { HttpSettings } from "../server/Settings.js"

/** The scopes as a sentence: `read, write or read_write`. */
const scopeChoices = `${Model.apiKeyScopes.slice(0, -1).join(", ")} or ${Model.apiKeyScopes.at(-1)}`

const usage = `usage:
  lm serve
  lm migrate
  lm api-keys create [--scope ${Model.apiKeyScopes.join("|")}] [--description TEXT]
  lm api-keys list
  lm signing-keys rotate
  lm signing-keys retire <kid>

Store: LM_STORAGE=memory | DATABASE_URL=postgres://… | LM_DATA_DIR=./data (embedded PGlite, the default).
With PGlite, stop the server before running other commands on the same data folder.`

/** `--name value` pairs after the command words. */
const flags = (args: ReadonlyArray<string>): Map<string, string> => {
  const out = new Map<string, string>()
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (!arg.startsWith("--")) continue
    const eq = arg.indexOf("=")
    if (eq > 0) out.set(arg.slice(2, eq), arg.slice(eq + 1))
    else out.set(arg.slice(2), args[i + 1] ?? "")
  }
  return out
}

/** Runs a one-off command against the engine on the configured store (no background sweep, retention, anomaly detection or delivery). */
const withEngine = <A, E>(program: Effect.Effect<A, E, ApiKeys | SigningKeys>) =>
  Effect.gen(function*() {
    const choice = yield* storeChoiceFromEnv
    const options = yield* engineOptionsFromEnv(choice)
    return yield* program.pipe(Effect.provide(Engine.layer(storeLayer(choice), {
      ...options,
      sweepIntervalSeconds: 0,
      eventRetentionDays: 0,
      anomalyIntervalSeconds: 0,
      webhooks: { ...options.webhooks, pollMillis: 0 }
    })))
  })

const fail = (message: string) => Effect.andThen(Console.error(message), Effect.sync(() => { process.exitCode = 2 }))

const main = (argv: ReadonlyArray<string>): Effect.Effect<void, unknown> => {
  const [command, sub] = argv
  const options = flags(argv)
  switch (`${command ?? ""} ${command === "api-keys" || command === "signing-keys" ? sub ?? "" : ""}`.trim()) {
    case "migrate":
      return Effect.gen(function*() {
        const choice = yield* storeChoiceFromEnv
        yield* Layer.build(storeLayer(choice)).pipe(Effect.scoped)
        yield* Console.log(`migrated: ${choice._tag}`)
      })
    case "api-keys create": {
      const scope = options.get("scope") ?? "read_write"
      if (!Schema.is(Model.ApiKeyScope)(scope)) return fail(`--scope must be ${scopeChoices}\n\n${usage}`)
      return withEngine(
        Effect.gen(function*() {
          const issued = yield* (yield* ApiKeys).create(Services.ApiKeyActor.operator, { description: options.get("description") ?? "", scope })
          yield* Console.log(`api key created: id=${issued.apiKey.id} scope=${scope}`)
          yield* Console.log(`consumer_key=${issued.consumerKey}`)
          yield* Console.log(`consumer_secret=${issued.consumerSecret}`)
          yield* Console.log("The secret is shown only now; store it safely.")
        })
      )
    }
    case "api-keys list":
      return withEngine(
        Effect.gen(function*() {
          const page = yield* (yield* ApiKeys).list(Services.ApiKeyActor.operator, { page: 1, perPage: 100 })
          for (const key of page.items) {
            yield* Console.log(`${key.id}\t${key.scope}\t${key.truncatedKey}\t${key.description}`)
          }
          if (page.items.length === 0) yield* Console.log("no API keys")
        })
      )
    case "signing-keys rotate":
      return withEngine(
        Effect.gen(function*() {
          const kid = yield* (yield* SigningKeys).rotate
          yield* Console.log(`new current signing key: kid=${kid}; earlier keys stay published in /public-key`)
        })
      )
    case "signing-keys retire": {
      const kid = argv[2]
      if (kid === undefined || kid.startsWith("--")) return fail(`signing-keys retire needs the kid of the key\n\n${usage}`)
      return withEngine(
        Effect.gen(function*() {
          yield* (yield* SigningKeys).retire(kid)
          yield* Console.log(`signing key ${kid} retired: no longer published; tokens it signed no longer verify`)
        })
      )
    }
    case "help":
    case "--help":
    case "":
      return Console.log(usage)
    default:
      return fail(`unknown command: ${argv.join(" ")}\n\n${usage}`)
  }
}

// Everything the service writes (PGlite's files, the master key) is for its own user only: folders 0700, files 0600.
process.umask(0o077)

const argv = process.argv.slice(2)
if (argv[0] === "serve") {
  runServer(
    Layer.unwrap(
      Effect.gen(function*() {
        const choice = yield* storeChoiceFromEnv
        const listen = yield* listenFromEnv
        const options = yield* engineOptionsFromEnv(choice)
        const redisUrl = yield* redisUrlFromEnv
        return serverLayer(choice, listen, options, redisUrl)
      })
    ).pipe(Layer.provide(HttpSettings.layerFromEnv))
  )
} else {
  // A refusal (bad settings, a key that cannot be retired, a store sealed with another master key) is one line on
  // stderr and exit code 1, not a stack trace.
  NodeRuntime.runMain(main(argv).pipe(
    Effect.catch((error) =>
      Effect.andThen(
        Console.error(refusalMessage(error)),
        Effect.sync(() => { process.exitCode = 1 })
      )
    )
  ))
}
