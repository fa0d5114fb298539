/** `lm signing-keys …`: rotate and retire the keys that sign tokens, on the store (CONTRACT §5, §13). */
import { Console, Effect } from "effect"
import { Argument, Command } from "effect/cli"
import { SigningKeys } from "@lm/domain"
import { auditCli, withEngine } from "./Store.js"

const rotate = Command.make("rotate", {}, () =>
  withEngine(Effect.gen(function*() {
    const kid = yield* (yield* SigningKeys).rotate
    yield* auditCli("signing_key.rotate", { type: "signing_key", id: kid })
    yield* Console.log(`new current signing key: kid=${kid}; earlier keys stay published in /public-key`)
  }))).pipe(Command.withDescription("Make a new current signing key; earlier ones stay published"))

const retire = Command.make("retire", { kid: Argument.String("kid").pipe(Argument.withDescription("The key id to retire")) }, ({ kid }) =>
  withEngine(Effect.gen(function*() {
    yield* (yield* SigningKeys).retire(kid)
    yield* auditCli("signing_key.retire", { type: "signing_key", id: kid })
    yield* Console.log(`signing key ${kid} retired: no longer published; tokens it signed no longer verify`)
  }))).pipe(Command.withDescription("Unlist an old (compromised) key: tokens it signed stop verifying"))

export const signingKeys = Command.make("signing-keys").pipe(
  Command.withDescription("Signing keys, on the store (stop a PGlite server first)"),
  Command.withSubcommands([rotate, retire])
)
