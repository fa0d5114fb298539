/**
 * The contract's success envelope (CONTRACT §1): `{"success": true, "data": {...}, "meta": {...}}`, where
 * `meta` is always an object (`{}` when empty).
 */
import { Schema } from "effect"

/** The empty `meta` of a response that has nothing to say there. */
export const NoMeta = Schema.Struct({})

/** The success envelope schema around a `data` schema and, optionally, a `meta` schema. */
export const Success = <Data extends Schema.Top, Meta extends Schema.Top = typeof NoMeta>(
  data: Data,
  meta?: Meta
) =>
  Schema.Struct({
    success: Schema.tag(true),
    data,
    meta: (meta ?? NoMeta) as Meta
  })

/** The value of a success envelope, for a handler to return. */
export interface Ok<Data, Meta> {
  readonly success: true
  readonly data: Data
  readonly meta: Meta
}

/** Wraps a handler's result in the success envelope; `meta` defaults to `{}`. */
export function ok<Data>(data: Data): Ok<Data, {}>
export function ok<Data, Meta>(data: Data, meta: Meta): Ok<Data, Meta>
export function ok<Data, Meta>(data: Data, meta?: Meta): Ok<Data, Meta | {}> {
  return { success: true, data, meta: meta ?? {} }
}
