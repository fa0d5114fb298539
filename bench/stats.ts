/** Statistics and formatting of the benchmark figures (no dependencies, so every script can load it cheaply). */

/** The median of `values` (the lower middle one for an even count). */
export const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN
}

/** The `p`-th percentile (0–100) of values already sorted ascending (nearest rank). */
export const percentile = (sorted: ArrayLike<number>, p: number): number => {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]!
}

/** `value` with `digits` decimals, or `–` when it is not a number. */
export const fixed = (value: number, digits = 0): string =>
  Number.isFinite(value) ? value.toFixed(digits) : "–"

/** A markdown table. */
export const markdownTable = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string =>
  [header, header.map(() => "---"), ...rows].map((cells) => `| ${cells.join(" | ")} |`).join("\n")
