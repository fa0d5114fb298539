import { describe, expect, it } from "vitest"

describe("workspace", () => {
  it("runs on Node 22.19 or newer", () => {
    const [major, minor] = process.versions.node.split(".").map(Number)
    expect(major! > 22 || (major === 22 && minor! >= 19)).toBe(true)
  })
})
