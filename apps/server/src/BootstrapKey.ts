/**
 * The bootstrap API key of CONTRACT §2: `LM_BOOTSTRAP_CONSUMER_*` ensured by the domain's rule whatever other keys
 * exist (never restored once an administrator deleted it), or one printed when the store has none.
 */
import { Config, Effect, Layer, Option, Redacted } from "effect"
import { ApiKeys, Services } from "@lm/domain"
import { InvalidSetting } from "@lm/http"

/** Ensures or prints the bootstrap key when the server starts. */
export const bootstrapKeyLayer = Layer.effectDiscard(
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    // Empty is unset.
    const key = Option.filter(yield* Config.String("LM_BOOTSTRAP_CONSUMER_KEY").pipe(Config.option), (text) => text !== "")
    const secret = Option.filter(
      yield* Config.Redacted("LM_BOOTSTRAP_CONSUMER_SECRET").pipe(Config.option),
      (text) => Redacted.value(text) !== ""
    )
    if (Option.isSome(key) !== Option.isSome(secret)) {
      return yield* new InvalidSetting({
        name: Option.isSome(key) ? "LM_BOOTSTRAP_CONSUMER_SECRET" : "LM_BOOTSTRAP_CONSUMER_KEY",
        message: "LM_BOOTSTRAP_CONSUMER_KEY and LM_BOOTSTRAP_CONSUMER_SECRET go together: set both, or neither"
      })
    }
    if (Option.isSome(key) && Option.isSome(secret)) {
      // The shape of API credentials is the domain's; a malformed one is a setting to fix, not a 401 at every call.
      if (!Services.consumerKeyPattern.test(key.value)) {
        return yield* new InvalidSetting({
          name: "LM_BOOTSTRAP_CONSUMER_KEY",
          message: "LM_BOOTSTRAP_CONSUMER_KEY: expected ck_ followed by 40 lowercase hex characters"
        })
      }
      if (!Services.consumerSecretPattern.test(Redacted.value(secret.value))) {
        return yield* new InvalidSetting({
          name: "LM_BOOTSTRAP_CONSUMER_SECRET",
          message: "LM_BOOTSTRAP_CONSUMER_SECRET: expected cs_ followed by 40 lowercase hex characters"
        })
      }
      const ensured = yield* apiKeys.ensure({
        consumerKey: key.value,
        consumerSecret: Redacted.value(secret.value),
        scope: "read_write",
        description: "bootstrap"
      })
      if (ensured.action === "withhold") {
        yield* Effect.logWarning(`bootstrap key not restored: ${Services.truncateConsumerKey(key.value)} was deleted`)
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
