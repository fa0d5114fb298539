/**
 * The `lm` command line (CONTRACT §13, §18) on `effect/cli`: `lm --help`, `lm <command> --help`, `lm --version`,
 * `lm --completions bash|zsh|fish`, and one file per resource in this folder. Two modes:
 * - against a running server: `LM_URL` and an API key (`LM_CONSUMER_KEY`, `LM_CONSUMER_SECRET`), through the typed
 *   client derived from the API definition (`Server.ts`); the server keeps running;
 * - directly on the store when no server runs: `migrate`, `api-keys` without `LM_URL`, `signing-keys` (`Store.ts`).
 * Exit codes: 0 done; 1 refused (one line on stderr: the contract's code and the message); 2 usage.
 */
import { Console, Effect } from "effect"
import { CliError, Command } from "effect/cli"
import { version } from "@lm/api"
import { apiKeys } from "./apiKeys.js"
import { auditLog } from "./auditLog.js"
import { generators } from "./generators.js"
import { licenses } from "./licenses.js"
import { machines } from "./machines.js"
import { releases } from "./releases.js"
import { policies } from "./policies.js"
import { migrate, serve } from "./serve.js"
import { signingKeys } from "./signingKeys.js"
import { subscriptions } from "./subscriptions.js"
import { webhooks } from "./webhooks.js"

/** The root command and every subcommand. */
export const lm = Command.make("lm").pipe(
  Command.withDescription(
    "The Licensing Service: its server and its command line. Commands on a running server need LM_URL, " +
      "LM_CONSUMER_KEY and LM_CONSUMER_SECRET; migrate, signing-keys and api-keys without LM_URL work on the store " +
      "(LM_STORAGE=memory | DATABASE_URL | LM_DATA_DIR, default ./data; stop a PGlite server first)."
  ),
  Command.withSubcommands([serve, migrate, licenses, machines, policies, subscriptions, generators, releases, webhooks, apiKeys, auditLog, signingKeys])
)

/** Sets the exit code. */
const exit = (code: number) => Effect.sync(() => { process.exitCode = code })

/** `lm` on these arguments: runs the command, and says how it ended in the exit code (see the module comment). */
export const runCli = (argv: ReadonlyArray<string>) =>
  Command.runWith(lm, { version })(argv).pipe(
    Effect.catch((error: unknown) => {
      if (CliError.isCliError(error)) {
        // Help asked for by leaving the command out is not an error; a parse error was already printed with the help.
        return exit(error._tag === "ShowHelp" && error.errors.length === 0 ? 0 : 2)
      }
      const tagged = error as { readonly _tag?: string; readonly code?: string; readonly message?: string }
      if (tagged._tag === "MissingSetting") return Effect.andThen(Console.error(`usage: ${tagged.message}`), exit(2))
      // A refused start was already said on stderr, in one line.
      if (tagged._tag === "StartRefused") return exit(1)
      const line = tagged._tag === "Refused" ? `${tagged.code}: ${tagged.message}` : String(tagged.message ?? error)
      return Effect.andThen(Console.error(line.replace(/\s*\n\s*/g, " ")), exit(1))
    })
  )
