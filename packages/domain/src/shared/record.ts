/**
 * One definition of each record. A record (a license, a machine, a release, ...) is a `Schema.Struct` of fields in
 * the domain's terms, written once in its feature's `model.ts`; a store's row and the wire's object are derived
 * from those fields, never written again by hand.
 *
 * Most fields look the same in every form. Two kinds do not, so their schemas carry a mark (`FieldKind`) that
 * the adapters read: times (`Millis`: epoch milliseconds here, `timestamptz` in a store, ISO 8601 on the wire)
 * and ids (`Id`: a record's id or a reference to one; `bigint` in a store). Field names are camelCase here and
 * snake_case in a store and on the wire (`snakeCase`).
 */
import { Schema } from "effect"

/** The key of the mark a field's schema carries when its form differs between the domain, a store and the wire. */
export const FieldKind: unique symbol = Symbol.for("@lm/domain/FieldKind")

/** The kinds of marked field: a time, an id. */
export type FieldKinds = "time" | "id"

/** A schema carrying the mark of its kind. */
export type Marked<S, K extends FieldKinds> = S & { readonly [FieldKind]: K }

const mark = <S extends Schema.Top, K extends FieldKinds>(schema: S, kind: K): Marked<S, K> =>
  Object.assign(schema, { [FieldKind]: kind })

/** Epoch milliseconds (UTC): a time. */
export const Millis = mark(Schema.Number.annotate({ description: "Epoch milliseconds (UTC)." }), "time")

/** A record's id, or a reference to a record or to an outside one (a product, an order, a user). */
export const Id = mark(Schema.Int.annotate({ description: "An id." }), "id")

/** A JSON object of free-form metadata. */
export const Meta = Schema.Record(Schema.String, Schema.Json)
export type Meta = typeof Meta.Type

/** The kind of a field (looking through `NullOr`), and whether it may be null; `undefined` for an unmarked one. */
export const fieldKind = (schema: unknown): { readonly kind: FieldKinds | undefined; readonly nullable: boolean } => {
  const own = (s: unknown): FieldKinds | undefined =>
    (typeof s === "function" || (typeof s === "object" && s !== null)) && FieldKind in s
      ? (s as { readonly [FieldKind]: FieldKinds })[FieldKind]
      : undefined
  const direct = own(schema)
  if (direct !== undefined) return { kind: direct, nullable: false }
  const members = (schema as { readonly members?: ReadonlyArray<unknown> }).members
  if (Array.isArray(members) && members.length === 2 && members[1] === Schema.Null) {
    return { kind: own(members[0]), nullable: true }
  }
  return { kind: undefined, nullable: false }
}

/** A camelCase field name in snake_case (`leaseExpiresAt` → `lease_expires_at`), as stores and the wire write it. */
export type SnakeCase<S extends string> = S extends `${infer C}${infer Rest}`
  ? `${C extends Lowercase<C> ? C : `_${Lowercase<C>}`}${SnakeCase<Rest>}`
  : S

/** {@link SnakeCase} on a value. */
export const snakeCase = <S extends string>(name: S): SnakeCase<S> =>
  name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) as SnakeCase<S>
