/**
 * How `lm` commands print: a table or `key: value` lines for people, the answer's JSON with `--json` for scripts.
 * Every command that prints takes {@link json}.
 */
import { Console, Effect, Option } from "effect"
import { Flag } from "effect/cli"

/** `--json`: print the server's answer (the envelope's `data`, with `meta` for a list) as JSON. */
export const json = Flag.Boolean("json").pipe(
  Flag.withDescription("Print the answer as JSON (for scripts) instead of a table"),
  Flag.withDefault(false)
)

/** A cell as text: null as `-`, objects as compact JSON. */
const cell = (value: unknown): string =>
  value === null || value === undefined ? "-" : typeof value === "object" ? JSON.stringify(value) : String(value)

/** Rows as a table with a header, columns padded to their widest cell. */
export const table = (rows: ReadonlyArray<Record<string, unknown>>, columns: ReadonlyArray<string>): string => {
  const cells = [columns.map((c) => c.toUpperCase()), ...rows.map((row) => columns.map((c) => cell(row[c])))]
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)))
  return cells.map((line) => line.map((text, i) => (i === line.length - 1 ? text : text.padEnd(widths[i]!))).join("  ")).join("\n")
}

/** An object as `key: value` lines. */
export const record = (value: Record<string, unknown>): string => {
  const width = Math.max(0, ...Object.keys(value).map((k) => k.length))
  return Object.entries(value).map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${cell(v)}`).join("\n")
}

/** A list's paging line: `3 of 57 (page 1 of 3)`. */
const pagingLine = (count: number, meta: { readonly total: number; readonly page: number; readonly total_pages: number }) =>
  `${count} of ${meta.total} (page ${meta.page} of ${meta.total_pages})`

/** Prints a single answer: JSON, or `key: value` lines. */
export const printOne = (asJson: boolean, data: Record<string, unknown>) =>
  Console.log(asJson ? JSON.stringify(data, null, 2) : record(data))

/** Prints a list answer: JSON (`{<items>, meta}`), or a table of `columns` and the paging line. */
export const printList = (
  asJson: boolean,
  key: string,
  items: ReadonlyArray<Record<string, unknown>>,
  meta: { readonly total: number; readonly page: number; readonly per_page: number; readonly total_pages: number },
  columns: ReadonlyArray<string>
) =>
  Console.log(
    asJson
      ? JSON.stringify({ [key]: items, meta }, null, 2)
      : items.length === 0
      ? `no ${key.replace(/_/g, " ")} (${pagingLine(0, meta)})`
      : `${table(items, columns)}\n${pagingLine(items.length, meta)}`
  )

/** The given flags only: `Option.none()` values are left out (so the body carries what the user set). */
export const given = <A extends Record<string, Option.Option<unknown>>>(
  flags: A
): { -readonly [K in keyof A]?: A[K] extends Option.Option<infer V> ? V : never } =>
  Object.fromEntries(
    Object.entries(flags).flatMap(([k, v]) => (Option.isSome(v) ? [[k, v.value]] : []))
  ) as never

/** `--page` and `--per-page` of every list. */
export const paging = {
  page: Flag.Int("page").pipe(Flag.withDescription("Page (default 1)"), Flag.optional),
  per_page: Flag.Int("per-page").pipe(Flag.withDescription("Items per page (default 20, at most 100)"), Flag.optional)
}

/** Effect's `Effect.void`, for handlers that print nothing more. */
export const done = Effect.void
