/** What the signing feature needs from a store: the signing keys. */
import { Context } from "effect"
import type { Op } from "../shared/ports.js"
import type { StoredSigningKey } from "./model.js"

export class SigningKeyRepository extends Context.Service<SigningKeyRepository, {
  /** Every key still accepted for verification, the current one included. */
  readonly list: Op<ReadonlyArray<StoredSigningKey>>
  /** Adds a key; when it is `current`, the previous current key stays listed but is no longer current. */
  readonly insert: (key: StoredSigningKey) => Op<void>
  /** Replaces the stored seed of a key (to seal a seed an older version stored in clear). */
  readonly replaceSeed: (kid: string, seed: string) => Op<void>
  /** Removes a key that is not current, so it is no longer published or accepted; false when there is none. */
  readonly retire: (kid: string) => Op<boolean>
}>()("@lm/domain/SigningKeyRepository") {}
