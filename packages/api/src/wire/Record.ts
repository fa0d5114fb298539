/**
 * A record's wire object, derived from the domain's one definition of the record (its `Schema.Struct`): the same
 * fields in the same order, named in snake_case, times as ISO 8601 with `Z`, ids as integers. A record's wire
 * shape says only how it differs: the fields it leaves out, the ones it names otherwise, and the ones the caller
 * supplies (a status computed now, a count, a nested record, money written in its currency).
 */
import { Schema } from "effect"
import { isoTime, Model } from "@lm/domain/core"

/** A time as the API writes it. */
export const Time = Schema.String.annotate({ description: "ISO 8601 UTC time, e.g. `2026-01-31T12:00:00.000Z`." })

type Marked<K extends Model.FieldKinds> = { readonly [Model.FieldKind]: K }

/** The wire schema of a domain field: a time becomes {@link Time}, an id an integer, any other stays. */
export type WireField<S> = S extends Marked<"time"> ? typeof Time
  : S extends Marked<"id"> ? Schema.Int
  : S extends Schema.NullOr<infer I> ? I extends Marked<"time"> ? Schema.NullOr<typeof Time>
    : I extends Marked<"id"> ? Schema.NullOr<Schema.Int>
    : S
  : S

type WireName<K extends string, R> = K extends keyof R ? R[K] extends string ? R[K] : never : Model.SnakeCase<K>

/** The wire fields of a record: its fields but `O`, renamed by `R` or put in snake_case, and the supplied `S`. */
export type WireFields<F extends Schema.Struct.Fields, O extends keyof F, R, S extends Schema.Struct.Fields> = {
  readonly [K in Exclude<keyof F & string, O> as WireName<K, R> extends keyof S ? never : WireName<K, R>]: WireField<F[K]>
} & S

/** A record's wire schema, and the function writing a record in it. */
export type WireRecord<W extends Schema.Struct.Fields, T, S extends Schema.Struct.Fields> = Schema.Struct<W> & {
  /** The wire object of `record`; the supplied fields come from `supplied`. */
  readonly from: (record: T, ...supplied: [keyof S] extends [never] ? [] : [Schema.Struct.Type<S>]) => Schema.Struct.Type<W>
}

/** How a record's wire object differs from the record. */
export interface WireShape<F extends Schema.Struct.Fields, O extends keyof F, R, S extends Schema.Struct.Fields> {
  /** Fields the wire never shows (a secret's hash, a store's bookkeeping). */
  readonly omit?: ReadonlyArray<O>
  /** Wire names other than the field's in snake_case. */
  readonly rename?: R & { readonly [K in keyof F]?: string }
  /**
   * Wire fields whose value the caller supplies: one named as a record field replaces it where it stands, any
   * other is added (at the end, or where `after` puts it).
   */
  readonly supplied?: S
  /** Wire fields placed right after another (by wire name), in the order given. */
  readonly after?: { readonly [name: string]: string }
  /** What the API document says of a field derived from the record (by wire name). */
  readonly describe?: { readonly [name: string]: string }
}

interface Entry {
  readonly wire: string
  readonly schema: Schema.Constraint
  /** The record field it is written from; undefined for a supplied one. */
  readonly field: string | undefined
  readonly time: boolean
}

const isoOrNull = (millis: number | null): string | null => (millis === null ? null : isoTime(millis))

/** A record's wire schema and writer, derived from the record's fields and how the wire differs. */
export const wireRecord = <
  F extends Schema.Struct.Fields,
  const O extends keyof F & string = never,
  const R extends { readonly [K in keyof F]?: string } = {},
  const S extends Schema.Struct.Fields = {}
>(
  record: { readonly fields: F },
  shape: WireShape<F, O, R, S> = {}
): WireRecord<WireFields<F, O, R, S>, Schema.Struct.Type<F>, S> => {
  const omit: ReadonlyArray<string> = shape.omit ?? []
  const rename: Record<string, string | undefined> = shape.rename ?? {}
  const supplied: Record<string, Schema.Constraint> = shape.supplied ?? {}
  const entries: Array<Entry> = []
  for (const [field, schema] of Object.entries(record.fields)) {
    if (omit.includes(field)) continue
    const wire = rename[field] ?? Model.snakeCase(field)
    const given = supplied[wire]
    if (given !== undefined) {
      entries.push({ wire, schema: given, field: undefined, time: false })
      continue
    }
    const { kind, nullable } = Model.fieldKind(schema)
    const plain = kind === "time" ? Time : kind === "id" ? Schema.Int : undefined
    const derived = plain === undefined ? schema : nullable ? Schema.NullOr(plain) : plain
    const description = shape.describe?.[wire]
    entries.push({
      wire,
      schema: description === undefined ? derived : (derived as Schema.Top).annotate({ description }),
      field,
      time: kind === "time"
    })
  }
  for (const [wire, schema] of Object.entries(supplied)) {
    if (!entries.some((e) => e.wire === wire)) entries.push({ wire, schema, field: undefined, time: false })
  }
  for (const [wire, before] of Object.entries(shape.after ?? {})) {
    const index = entries.findIndex((e) => e.wire === wire)
    const entry = entries.splice(index, index < 0 ? 0 : 1)[0]
    const at = entries.findIndex((e) => e.wire === before)
    if (entry === undefined || at < 0) throw new Error(`wireRecord: cannot place ${wire} after ${before}`)
    entries.splice(at + 1, 0, entry)
  }
  const from = (value: Record<string, unknown>, given: Record<string, unknown> = {}) => {
    const out: Record<string, unknown> = {}
    for (const e of entries) {
      out[e.wire] = e.field === undefined ? given[e.wire] : e.time ? isoOrNull(value[e.field] as number | null) : value[e.field]
    }
    return out
  }
  const schema = Schema.Struct(Object.fromEntries(entries.map((e) => [e.wire, e.schema])))
  return Object.assign(schema, { from }) as unknown as WireRecord<WireFields<F, O, R, S>, Schema.Struct.Type<F>, S>
}
