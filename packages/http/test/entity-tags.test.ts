/**
 * `If-None-Match` (RFC 9110 §13.1.2) as the CRL and the artifact download answer it: `*`, or a list of entity
 * tags compared weakly (§8.8.3.2: `W/"a"` and `"a"` are the same tag, whichever side is weak), each tag read as
 * a quoted string, so a comma inside one does not split it.
 */
import { describe, expect, it } from "vitest"
import { ifNoneMatchMatches } from "../src/server/EntityTags.js"

describe("If-None-Match", () => {
  it("matches the same opaque tag whichever side is weak", () => {
    expect(ifNoneMatchMatches(`"a"`, `"a"`)).toBe(true)
    expect(ifNoneMatchMatches(`W/"a"`, `"a"`)).toBe(true)
    expect(ifNoneMatchMatches(`"a"`, `W/"a"`)).toBe(true)
    expect(ifNoneMatchMatches(`W/"a"`, `W/"a"`)).toBe(true)
  })

  it("matches any tag of a list, and *", () => {
    expect(ifNoneMatchMatches(`"stale", W/"a"`, `"a"`)).toBe(true)
    expect(ifNoneMatchMatches(` "stale" ,"a" `, `"a"`)).toBe(true)
    expect(ifNoneMatchMatches("*", `"a"`)).toBe(true)
  })

  it("reads each tag as a quoted string: a comma inside a tag is part of it", () => {
    expect(ifNoneMatchMatches(`"a,b"`, `"a,b"`)).toBe(true)
    expect(ifNoneMatchMatches(`W/"x", "a,b"`, `W/"a,b"`)).toBe(true)
    expect(ifNoneMatchMatches(`"a,b"`, `"b"`)).toBe(false)
  })

  it("matches nothing else", () => {
    expect(ifNoneMatchMatches(undefined, `"a"`)).toBe(false)
    expect(ifNoneMatchMatches("", `"a"`)).toBe(false)
    expect(ifNoneMatchMatches(`"b"`, `"a"`)).toBe(false)
    expect(ifNoneMatchMatches(`a`, `"a"`)).toBe(false)
    expect(ifNoneMatchMatches(`w/"a"`, `"a"`)).toBe(false)
    expect(ifNoneMatchMatches(`"a`, `"a"`)).toBe(false)
  })
})
