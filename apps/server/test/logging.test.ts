/**
 * The logs (CONTRACT §18): `LM_LOG_FORMAT`, `LM_LOG_LEVEL` and `LM_ACCESS_LOG` read from the environment; JSON
 * lines with time, level, message, annotations (the request id) and the current span; text lines; the level
 * filter; and the redaction every line goes through.
 */
import { ConfigProvider, Effect, Exit } from "effect"
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest"
import { layerLogging, redact } from "../src/Logging.js"
import { logSettingsFromEnv } from "../src/settings/Logging.js"

const read = (env: Record<string, string>, terminal = false) =>
  Effect.runSyncExit(Effect.provide(logSettingsFromEnv(terminal), ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))

describe("log settings", () => {
  it("default to JSON at info without access log when stdout is not a terminal, text on a terminal", () => {
    expect(read({})).toEqual(Exit.succeed({ format: "json", level: "info", accessLog: false }))
    expect(read({}, true)).toEqual(Exit.succeed({ format: "text", level: "info", accessLog: false }))
  })

  it("read LM_LOG_FORMAT, LM_LOG_LEVEL and LM_ACCESS_LOG", () => {
    expect(read({ LM_LOG_FORMAT: "text", LM_LOG_LEVEL: "WARN", LM_ACCESS_LOG: "1" }))
      .toEqual(Exit.succeed({ format: "text", level: "warn", accessLog: true }))
  })

  it("refuse a value they cannot read, naming the setting", () => {
    for (const [name, value] of [["LM_LOG_FORMAT", "xml"], ["LM_LOG_LEVEL", "verbose"], ["LM_ACCESS_LOG", "maybe"]] as const) {
      const exit = read({ [name]: value })
      expect(Exit.isFailure(exit) && String(exit.cause)).toContain(name)
    }
  })
})

describe("log lines", () => {
  let lines: Array<string>
  beforeEach(() => {
    lines = []
    vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk))
      return true
    })
  })
  afterEach(() => vi.restoreAllMocks())

  const run = (effect: Effect.Effect<void>, format: "json" | "text", level: "debug" | "info" | "warn" | "error" = "info") =>
    Effect.runSync(Effect.provide(effect, layerLogging({ format, level, accessLog: false })))

  it("JSON: one object per line with time, level, message, the annotations and the current span", () => {
    run(
      Effect.logWarning("store slow").pipe(Effect.annotateLogs({ request_id: "req-1" }), Effect.withSpan("Licenses.revoke")),
      "json"
    )
    expect(lines).toHaveLength(1)
    expect(lines[0]!.endsWith("\n")).toBe(true)
    const line = JSON.parse(lines[0]!)
    expect(line).toMatchObject({ level: "warn", message: "store slow", request_id: "req-1", span: "Licenses.revoke" })
    expect(line.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect(line.trace_id).toMatch(/^[0-9a-f]{32}$/)
    expect(line.span_id).toMatch(/^[0-9a-f]{16}$/)
  })

  it("text: time, level, message and the annotations on one line", () => {
    run(Effect.logInfo("Listening").pipe(Effect.annotateLogs({ request_id: "req-2" })), "text")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\S+ INFO Listening request_id=req-2\n$/)
  })

  it("LM_LOG_LEVEL drops what is below it", () => {
    run(Effect.all([Effect.logDebug("d"), Effect.logInfo("i"), Effect.logWarning("w"), Effect.logError("e")]).pipe(Effect.asVoid), "json", "warn")
    expect(lines.map((line) => JSON.parse(line).message)).toEqual(["w", "e"])
    lines.length = 0
    run(Effect.logDebug("d"), "json", "debug")
    expect(lines).toHaveLength(1)
  })

  it("a secret in a message, an annotation or a cause is cut", () => {
    run(
      Effect.logError("refused ABCD-EFGH-IJKL-MNOP", new Error("cs_0123456789abcdef0123456789abcdef01234567")).pipe(
        Effect.annotateLogs({ url: "/updates/download?token=eyJhbGciOiJFZERTQSJ9.c2lnbmF0dXJlc2lnbmF0dXJl" })
      ),
      "json"
    )
    expect(lines.join("")).not.toMatch(/EFGH|0123456789abcdef|eyJhbGciOiJFZERTQSJ9/)
    expect(JSON.parse(lines[0]!).message).toBe("refused ABCD-… Error: cs_…")
  })
})

describe("redact", () => {
  it("cuts license keys, API and webhook secrets, credentials, download tokens and signed tokens", () => {
    expect(redact("key abcd-efgh-ijkl-mnop0123 used")).toBe("key abcd-… used")
    // imported keys (CONTRACT §17): WPLM's five groups, three long groups
    expect(redact("key WPLM1-AB2C-DE3F-GH4I-JK5L used")).toBe("key WPLM1-… used")
    expect(redact("key 5F3A9C2B7D1E4F60-A1B2C3D4E5F60718-99AA88BB77CC66DD")).toBe("key 5F3A9C2B7D1E4F60-…")
    expect(redact("a cross-process-lock on event-log rows, UTF-8")).toBe("a cross-process-lock on event-log rows, UTF-8")
    expect(redact("cs_0123456789abcdef0123456789abcdef01234567")).toBe("cs_…")
    expect(redact("whsec_00ff00ff00ff00ff00ff")).toBe("whsec_…")
    expect(redact("authorization: Basic Y2tfYTpjc19i")).toBe("authorization: Basic …")
    expect(redact("GET /x?a=1&token=abc.def")).toBe("GET /x?a=1&token=…")
    expect(redact("t=eyJ2IjoxLCJraWQiOiJrMSJ9.AAAAAAAAAAAAAAAAAAAAAAAA")).toBe("t=…")
  })

  it("leaves request ids, dates, routes and consumer keys alone", () => {
    const text = "1b4e28ba-2fa1-11d2-883f-0016d3cca427 2026-11-27T19:20:00.000Z /api/lm/v1/licenses/:key ck_0123456789abcdef"
    expect(redact(text)).toBe(text)
  })
})
