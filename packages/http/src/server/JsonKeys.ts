/**
 * Duplicate keys in JSON text (CONTRACT §14: a body with a duplicated key is 400 `rest_invalid_json`).
 * `JSON.parse` keeps the last of two equal keys silently, so a client and a proxy (or two services) reading the
 * same body could disagree about it. The well-kept parser that refuses duplicates (lossless-json) is a whole
 * second JSON parser in plain JavaScript, building a second value (its numbers as `LosslessNumber`, `__proto__`
 * keys assigned rather than defined): too much to run beside `JSON.parse` on every hot request, and its value
 * would not be the one `JSON.parse` gives the decoders. Hence this scanner: one pass over the text that only
 * compares keys, beside `JSON.parse`, which still builds the value.
 */

/** Keys kept in an array before a set (see `duplicateKey`). */
const smallObject = 16

/** JSON's whitespace: space, tab, line feed, carriage return. */
const isWhitespace = (c: number): boolean => c === 32 || c === 9 || c === 10 || c === 13

/** The text of a string literal's inside with escapes (`\"`, `\u0022`, ...), or undefined when they are not JSON. */
const decodeEscaped = (raw: string): string | undefined => {
  try {
    const value: unknown = JSON.parse(`"${raw}"`)
    return typeof value === "string" ? value : undefined
  } catch {
    return undefined
  }
}

/**
 * The first key that appears twice in one object of JSON `text`, at any depth, compared after decoding escapes
 * (`"a\""` and `"a\u0022"` are the same key); undefined when there is none. Meant for text `JSON.parse` accepts;
 * on other text it stops at an unterminated string and may or may not name a key (the body is refused as not
 * JSON either way).
 */
export const duplicateKey = (text: string): string | undefined => {
  // The keys seen in each object being read, innermost last. Arrays need no entry: only keys are followed by ':'.
  // A short array while an object holds few keys (cheaper to make and search than a set), a set past
  // `smallObject` keys (so that an object of 100,000 keys is not searched in quadratic time).
  const objects: Array<Array<string> | Set<string>> = []
  const length = text.length
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i)
    if (c === 123) objects.push([])
    else if (c === 125) objects.pop()
    else if (c === 34) {
      const start = i + 1
      let escaped = false
      for (i = start; i < length; i++) {
        const d = text.charCodeAt(i)
        if (d === 34) break
        if (d === 92) {
          escaped = true
          i++ // the escaped character (a quote included) never ends the string
        }
      }
      if (i >= length) return undefined
      let next = i + 1
      while (next < length && isWhitespace(text.charCodeAt(next))) next++
      if (next >= length || text.charCodeAt(next) !== 58) continue
      const keys = objects[objects.length - 1]
      if (keys === undefined) continue
      const raw = text.slice(start, i)
      const key = escaped ? decodeEscaped(raw) : raw
      if (key === undefined) continue
      if (Array.isArray(keys)) {
        if (keys.includes(key)) return key
        keys.push(key)
        if (keys.length > smallObject) objects[objects.length - 1] = new Set(keys)
      } else {
        if (keys.has(key)) return key
        keys.add(key)
      }
    }
  }
  return undefined
}
