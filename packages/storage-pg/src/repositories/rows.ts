/**
 * Rows to domain values and back: the schemas of the column types the tables share, the decoders that turn
 * query results into domain values, and the parameters that go the other way. @effect/sql-pg returns `int8`
 * (ids, counts, counters) as `bigint`, `timestamptz` as `Date`, `json`/`jsonb` parsed.
 */
import { Data, Effect, Schema, SchemaTransformation } from "effect"
import * as Arr from "effect/Array"
import { Model } from "@lm/domain"

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

/** A field's column schema: ids as `int8`, times as `timestamptz` (nullable or not); any other field as it is. */
const columnOf = (field: Schema.Constraint): Schema.Constraint => {
  const { kind, nullable } = Model.fieldKind(field)
  const column = kind === "id" ? Int8 : kind === "time" ? Timestamp : undefined
  return column === undefined ? field : nullable ? Schema.NullOr(column) : column
}

/** How a record's table differs from the record. */
export interface TableShape<F extends Schema.Struct.Fields, G extends keyof F, Q extends keyof F> {
  /** Column names other than the field's name in snake_case. */
  readonly columns?: { readonly [K in keyof F]?: string }
  /** Fields the store fills in itself (an identity id, a counter that starts at its default): read, never inserted. */
  readonly generated?: ReadonlyArray<G>
  /**
   * Fields the queries compute rather than read from a column of the table (an aggregate of another table), with
   * the schema of what the query gives: read, never written.
   */
  readonly computed?: { readonly [K in Q]: Schema.Decoder<F[K]["Type"]> }
  /** The schema a column is read with where it is not the field's own (a count kept as `int8`). */
  readonly read?: { readonly [K in keyof F]?: Schema.Decoder<F[K]["Type"]> }
  /**
   * Fields that are records of their own (a `Schema.Struct`) kept in one column per field of theirs, named
   * `<field>_<its field>` in snake_case unless named here (`{ actor: { apiKeyId: "api_key_id" } }`).
   */
  readonly embedded?: { readonly [K in keyof F]?: { readonly [field: string]: string } }
}

/** Whether a field is kept in a `jsonb` column: an object or an array, or either or null. */
const isJson = (field: Schema.Constraint): boolean => {
  const tag = (field as Schema.Top).ast._tag
  if (tag === "Objects" || tag === "Arrays") return true
  const members = (field as { readonly members?: ReadonlyArray<Schema.Constraint> }).members
  return Array.isArray(members) && members.length === 2 && members[1] === Schema.Null && isJson(members[0])
}

/**
 * A record's table, derived from the record (one of the domain's `Schema.Struct`s) and how the table differs:
 *
 * - `Row` decodes a row to the record: each field read from its column (snake_case unless `columns` names it),
 *   ids from `int8` and times from `timestamptz`. Columns the record does not name are not read.
 * - `columns(value)` writes a record (but its generated and computed fields) as statement parameters keyed by
 *   column: times through `time` (a `Date` by default), objects and arrays (but a null) through `json` (`sql.json` for
 *   `INSERT`/`UPDATE`; the value itself inside a JSON record for `jsonb_to_recordset`, with ISO text for times),
 *   every other field as it is.
 */
export const tableOf = <F extends Schema.Struct.Fields, const G extends keyof F & string = never, const Q extends keyof F & string = never>(
  record: { readonly fields: F },
  shape: TableShape<F, G, Q> = {}
) => {
  const names: Record<string, string | undefined> = shape.columns ?? {}
  const computed: Record<string, Schema.Constraint | undefined> = shape.computed ?? {}
  const generated: ReadonlyArray<string> = shape.generated ?? []
  const read: Record<string, Schema.Constraint | undefined> = shape.read ?? {}
  const embedded: Record<string, Record<string, string> | undefined> = shape.embedded ?? {}
  const fields: Record<string, Schema.Constraint> = {}
  const renames: Record<string, string> = {}
  const written: Array<Written> = []
  /** Every column read, by name, and where each field is read from: a column, or one per field of an embedded record. */
  const flat: Record<string, Schema.Constraint> = {}
  const sources: Array<{ readonly key: string; readonly column: string; readonly parts?: ReadonlyArray<readonly [string, string]> }> = []
  for (const [key, field] of Object.entries(record.fields)) {
    const column = names[key] ?? Model.snakeCase(key)
    const isWritten = computed[key] === undefined && !generated.includes(key)
    const inner = embedded[key]
    if (inner !== undefined) {
      const parts = Object.entries((field as unknown as { readonly fields: Schema.Struct.Fields }).fields).map(([sub, subField]) => {
        const subColumn = inner[sub] ?? `${column}_${Model.snakeCase(sub)}`
        flat[subColumn] = columnOf(subField)
        if (isWritten) {
          written.push({ key, sub, column: subColumn, time: Model.fieldKind(subField).kind === "time", json: isJson(subField) })
        }
        return [sub, subColumn] as const
      })
      sources.push({ key, column, parts })
      continue
    }
    fields[key] = computed[key] ?? read[key] ?? columnOf(field)
    flat[column] = fields[key]
    sources.push({ key, column })
    if (column !== key) renames[key] = column
    if (isWritten) written.push({ key, sub: undefined, column, time: Model.fieldKind(field).kind === "time", json: isJson(field) })
  }
  const Row = (sources.every((source) => source.parts === undefined)
    ? Schema.Struct(fields).pipe(Schema.encodeKeys(renames))
    // With embedded records: the columns decoded as they are, then gathered into the record (and checked as one).
    : (Schema.Struct(flat) as unknown as Schema.Codec<Record<string, unknown>>).pipe(Schema.decodeTo(
      Schema.Struct(record.fields) as unknown as Schema.Codec<Record<string, unknown>>,
      SchemaTransformation.transform({
        decode: (row: Record<string, unknown>): Record<string, unknown> =>
          Object.fromEntries(sources.map(({ column, key, parts }) => [
            key,
            parts === undefined ? row[column] : Object.fromEntries(parts.map(([sub, subColumn]) => [sub, row[subColumn]]))
          ])),
        encode: (value: Record<string, unknown>): Record<string, unknown> =>
          Object.fromEntries(sources.flatMap(({ column, key, parts }) =>
            parts === undefined
              ? [[column, value[key]]]
              : parts.map(([sub, subColumn]) => [subColumn, (value[key] as Record<string, unknown>)[sub]])
          ))
      })
    ))) as unknown as Schema.Decoder<Schema.Struct.Type<F>>
  const columns = (
    value: Omit<Schema.Struct.Type<F>, G | Q>,
    time: (value: number | null) => unknown = date,
    json: (value: unknown) => unknown = (v) => v
  ): Record<string, unknown> => {
    const out: Record<string, unknown> = {}
    const fields = value as Record<string, unknown>
    for (const { column, json: isJsonColumn, key, sub, time: isTime } of written) {
      const field = sub === undefined ? fields[key] : (fields[key] as Record<string, unknown>)[sub]
      out[column] = isTime ? time(field as number | null) : isJsonColumn && field !== null ? json(field) : field
    }
    return out
  }
  return { Row, columns }
}

/** A column a record's field (or a field of an embedded record of it) is written to. */
interface Written {
  readonly key: string
  readonly sub: string | undefined
  readonly column: string
  readonly time: boolean
  readonly json: boolean
}

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
