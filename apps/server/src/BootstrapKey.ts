/**
 * The bootstrap API key of CONTRACT §2: `LM_BOOTSTRAP_CONSUMER_*` ensured by the domain's rule (not restored once
 * an administrator deleted it and other read_write keys exist), or one printed when the store has none.
 */
import { Config, Effect, Layer, Option, Redacted } from "effect"
import { ApiKeys } from "@lm/domain"

/** Ensures or prints the bootstrap key when the server starts. */
export const bootstrapKeyLayer = Layer.effectDiscard(
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    const key = yield* Config.String("LM_BOOTSTRAP_CONSUMER_KEY").pipe(Config.option)
    const secret = yield* Config.Redacted("LM_BOOTSTRAP_CONSUMER_SECRET").pipe(Config.option)
    if (Option.isSome(key) && Option.isSome(secret)) {
      const ensured = yield* apiKeys.ensure({
        consumerKey: key.value,
        consumerSecret: Redacted.value(secret.value),
        scope: "read_write",
        description: "bootstrap"
      })
      if (ensured.action === "withhold") {
        yield* Effect.logWarning(
          "bootstrap key not restored: the LM_BOOTSTRAP_CONSUMER_KEY key was deleted and other read_write keys exist"
        )
      }
      return
    }
    const issued = yield* apiKeys.bootstrapIfEmpty
    if (issued !== undefined) {
      // Printed once, on stdout, so an operator can pick it up; it is never logged again.
      process.stdout.write(`bootstrap api key: consumer_key=${issued.consumerKey} consumer_secret=${issued.consumerSecret}\n`)
    }
  })
)
