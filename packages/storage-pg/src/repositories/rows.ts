/**
 * Rows to domain values and back: the schemas of the column types the tables share, the decoders that turn
 * query results into domain values, and the parameters that go the other way. @effect/sql-pg returns `int8`
 * (ids, counts, counters) as `bigint`, `timestamptz` as `Date`, `json`/`jsonb` parsed.
 */
import { Data, Effect, Schema, SchemaTransformation } from "effect"
import * as Arr from "effect/Array"

/**
 * An `int8` column (`bigint` from the driver) as a number: values beyond ±(2^53 - 1) fail to decode rather
 * than be rounded, since the domain's ids and counts are numbers.
 */
export const Int8 = Schema.BigInt.check(
  Schema.isBetweenBigInt({ minimum: BigInt(Number.MIN_SAFE_INTEGER), maximum: BigInt(Number.MAX_SAFE_INTEGER) })
).pipe(Schema.decodeTo(Schema.Int, SchemaTransformation.transform({ decode: Number, encode: BigInt })))

/** An `int8` written as decimal text (`bigint::text` inside JSON, where a number would already be rounded). */
export const Int8Text = Schema.BigIntFromString.pipe(Schema.decodeTo(Int8))

/** A `timestamptz` column (a valid `Date` from the driver) as epoch milliseconds. */
export const Timestamp = Schema.Date.pipe(
  Schema.decodeTo(Schema.Number, SchemaTransformation.transform({ decode: (d) => d.getTime(), encode: (ms) => new Date(ms) }))
)

/** The one column of `SELECT count(*) AS n`. */
export const Count = Schema.Struct({ n: Int8 })

/** The one column of `RETURNING id`. */
export const Id = Schema.Struct({ id: Int8 })

/**
 * A row the database returned that does not decode (a value out of range, a column of another type): a defect,
 * the same as any other unexpected SQL failure, never a silently wrong value.
 */
export class RowDecodeError extends Data.TaggedError("RowDecodeError")<{ readonly message: string }> {}

/**
 * Decodes every row of a result with `schema` (built once per schema); `what` names the rows in the message of
 * a failure (e.g. `"lm_licenses"`).
 */
export const rowsOf = <A>(schema: Schema.Decoder<A>, what: string) => {
  const decode = Schema.decodeUnknownEffect(Schema.Array(schema))
  return (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<A>> =>
    decode(rows).pipe(
      Effect.catch((error) => Effect.die(new RowDecodeError({ message: `A row of ${what} does not decode: ${error.message}` })))
    )
}

/** As {@link rowsOf}, for the first row only (undefined when there is none). */
export const firstOf = <A>(schema: Schema.Decoder<A>, what: string) => {
  const decode = rowsOf(schema, what)
  return (rows: ReadonlyArray<unknown>): Effect.Effect<A | undefined> =>
    rows.length === 0 ? Effect.succeed(undefined) : Effect.map(decode(rows.slice(0, 1)), (decoded) => decoded[0])
}

/** As {@link firstOf}, for a statement that always returns a row (`INSERT … RETURNING`, `count(*)`). */
export const oneOf = <A>(schema: Schema.Decoder<A>, what: string) => {
  const decode = rowsOf(schema, what)
  return (rows: ReadonlyArray<unknown>): Effect.Effect<A> =>
    Effect.flatMap(decode(rows.slice(0, 1)), (decoded) =>
      Arr.isReadonlyArrayNonEmpty(decoded)
        ? Effect.succeed(decoded[0])
        : Effect.die(new RowDecodeError({ message: `Expected a row of ${what}, got none` })))
}

/** Epoch milliseconds as a parameter for a `timestamptz` column. */
export const date = (value: number | null): Date | null => (value === null ? null : new Date(value))

/** Epoch milliseconds as ISO text, for `timestamptz` fields of JSON records unpacked in SQL. */
export const iso = (value: number | null): string | null => (value === null ? null : new Date(value).toISOString())

/** `items` in consecutive slices of at most `size`, each non-empty. */
export const chunk = <A>(items: ReadonlyArray<A>, size: number): Array<Arr.NonEmptyReadonlyArray<A>> => {
  const out: Array<Arr.NonEmptyReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) {
    const slice = items.slice(i, i + size)
    if (Arr.isReadonlyArrayNonEmpty(slice)) out.push(slice)
  }
  return out
}
