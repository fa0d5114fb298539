/**
 * `lm`'s help, version, completions and exit codes (issue 30): the help of the root and of commands as committed
 * snapshots (regenerate with `npx vitest run test/cli/help.test.ts -u` after a deliberate change), `lm serve --help`
 * printing help instead of starting a server, and the exit codes: 0 done, 1 refused (one stderr line with the
 * code), 2 usage.
 */
import { describe, expect, it } from "vitest"
import { version } from "@lm/api"
import { lm } from "./support/Lm.js"

describe("lm help, version and exit codes", { timeout: 300_000 }, () => {
  it.each([
    ["lm", []],
    ["licenses", ["licenses"]],
    ["licenses-create", ["licenses", "create"]],
    ["licenses-import", ["licenses", "import"]],
    ["licenses-export", ["licenses", "export"]],
    ["releases-publish", ["releases", "publish"]],
    ["audit-log", ["audit-log"]],
    ["serve", ["serve"]]
  ])("lm %s --help prints the committed help and exits 0", async (name, words) => {
    const run = await lm([...words, "--help"])
    expect(run.code).toBe(0)
    expect(run.err).toBe("")
    await expect(run.out).toMatchFileSnapshot(`./__snapshots__/help-${name}.txt`)
  })

  it("lm --version prints the version; lm --completions prints a shell script", async () => {
    const shown = await lm(["--version"])
    expect([shown.code, shown.out.trim()]).toEqual([0, `lm v${version}`])
    const completions = await lm(["--completions", "bash"])
    expect(completions.code).toBe(0)
    expect(completions.out).toContain("complete")
    expect(completions.out).toContain("licenses")
  })

  it("a usage error exits 2: an unknown command or flag, a bad value, a missing argument, no LM_URL", async () => {
    const unknown = await lm(["frobnicate"])
    expect([unknown.code, unknown.err.trim()]).toEqual([2, 'ERROR\n  Unknown subcommand "frobnicate" for "lm"'])
    const flag = await lm(["licenses", "list", "--bogus"])
    expect([flag.code, flag.err]).toEqual([2, expect.stringContaining("Unrecognized flag: --bogus in command lm licenses list")])
    const value = await lm(["licenses", "list", "--status", "sleeping"])
    expect([value.code, value.err]).toEqual([2, expect.stringContaining("--status")])
    const argument = await lm(["licenses", "show"])
    expect([argument.code, argument.err]).toEqual([2, expect.stringContaining("key")])
    const noServer = await lm(["licenses", "list"])
    expect([noServer.code, noServer.err.trim()]).toEqual([
      2,
      "usage: LM_URL is not set: this command talks to a running server (LM_URL=http://host:port, LM_CONSUMER_KEY, LM_CONSUMER_SECRET)"
    ])
  })

  it("a refusal exits 1 with one stderr line naming its code (here: no server answers at LM_URL)", async () => {
    const run = await lm(["licenses", "list"], { LM_URL: "http://127.0.0.1:9", LM_CONSUMER_KEY: "ck_x", LM_CONSUMER_SECRET: "cs_x" })
    expect(run.code).toBe(1)
    expect(run.out).toBe("")
    expect(run.err.trim().split("\n")).toHaveLength(1)
    expect(run.err).toMatch(/^unreachable: cannot reach the server at LM_URL/)
  })

  it("lm with no command prints the help and exits 0", async () => {
    const run = await lm([])
    expect(run.code).toBe(0)
    expect(run.out).toContain("SUBCOMMANDS")
  })
})
