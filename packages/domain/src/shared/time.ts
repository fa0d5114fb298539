/**
 * Wire times: epoch milliseconds as ISO 8601 UTC. Portable (no node: modules), so the API definition that uses
 * it loads in browsers too.
 *
 * @since 0.1.0
 */

/**
 * Times already written, by epoch milliseconds. A license's and a machine's times (created, updated,
 * activated, expires) are written again on every validation of it, in the answer and in its signed payload;
 * formatting a `Date` costs far more than the lookup. Emptied when full, so it holds the times in use.
 */
const written = new Map<number, string>()
const writtenLimit = 16_384

/** Epoch milliseconds as ISO 8601 UTC (`expires`, `generated_at`, and every time on the wire). */
export const isoTime = (millis: number): string => {
  let text = written.get(millis)
  if (text === undefined) {
    text = new Date(millis).toISOString()
    if (written.size >= writtenLimit) written.clear()
    written.set(millis, text)
  }
  return text
}
