/**
 * Entity tags (RFC 9110 §8.8.3) as conditional requests compare them. Each tag is a quoted string, optionally
 * marked weak (`W/"..."`); a list separates tags with commas, which may also occur inside a tag.
 */

/** The opaque part (the quoted string, quotes included) of each entity tag in a list; malformed entries are skipped. */
const opaqueTags = (list: string): Array<string> => {
  const tags: Array<string> = []
  let i = 0
  while (i < list.length) {
    while (i < list.length && (list[i] === " " || list[i] === "\t" || list[i] === ",")) i++
    if (list.startsWith("W/", i)) i += 2
    if (list[i] === "\"") {
      const end = list.indexOf("\"", i + 1)
      if (end === -1) break
      const next = end + 1
      // A tag ends at the list's end or a separator; anything else makes the entry malformed.
      if (next === list.length || /[ \t,]/.test(list[next]!)) {
        tags.push(list.slice(i, next))
        i = next
        continue
      }
    }
    // Not a tag: skip to the next separator.
    const comma = list.indexOf(",", i + 1)
    if (comma === -1) break
    i = comma
  }
  return tags
}

/** The opaque part of one entity tag: `W/"a"` and `"a"` are both `"a"`. */
const opaqueTag = (etag: string): string => (etag.startsWith("W/") ? etag.slice(2) : etag)

/**
 * Whether an `If-None-Match` header matches the current entity tag `etag` (RFC 9110 §13.1.2): `*`, or a listed tag
 * equal to it by the weak comparison (§8.8.3.2: the opaque parts are equal, whichever side is weak). No header,
 * or one that names no tag, matches nothing.
 */
export const ifNoneMatchMatches = (header: string | undefined, etag: string): boolean => {
  if (header === undefined) return false
  if (header.trim() === "*") return true
  const wanted = opaqueTag(etag)
  return opaqueTags(header).some((tag) => tag === wanted)
}
