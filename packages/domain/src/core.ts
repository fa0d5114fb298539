/**
 * `@lm/domain/core` — the model, the pure rules and the contract's errors, without the services, the signer or
 * anything else that needs node: modules. The HTTP API definition imports the domain through this entry, so
 * that the definition (and the typed client derived from it, `@lm/client`) loads in browsers, Deno and Bun.
 *
 * @since 0.1.0
 */
export * as Errors from "./errors.js"
export * as License from "./licensing/license.js"
export * as Machine from "./licensing/machine.js"
export * as Model from "./model.js"
export * as Entitlements from "./licensing/entitlements.js"
export * as Validation from "./licensing/validation.js"
export * as Importing from "./licensing/importing.js"
export { isoTime } from "./shared/time.js"
export * as Money from "./shared/money.js"
/** The mark of a record field whose form differs between the domain, a store and the wire (see `Model.Millis`). */
export { FieldKind, type Marked } from "./shared/record.js"
