/**
 * The log settings (CONTRACT §18): `LM_LOG_FORMAT` (`json` or `text`; default `json` when stdout is not a
 * terminal, else `text`), `LM_LOG_LEVEL` (`debug`, `info`, `warn`, `error`; default `info`) and `LM_ACCESS_LOG`
 * (`1`: one line per request).
 */
import { Config, Effect } from "effect"
import type { InvalidSetting } from "@lm/http"
import { parseSwitch, readSetting } from "./Read.js"

export const logFormats = ["json", "text"] as const
export type LogFormat = (typeof logFormats)[number]

/** The levels an operator may choose, and effect's `LogLevel` for each. */
export const logLevels = { debug: "Debug", info: "Info", warn: "Warn", error: "Error" } as const
export type LogLevelName = keyof typeof logLevels

export interface LogSettings {
  readonly format: LogFormat
  readonly level: LogLevelName
  readonly accessLog: boolean
}

const oneOf = <A extends string>(name: string, choices: ReadonlyArray<A>, text: string, fallback: A) =>
  readSetting(name, () => {
    const value = text.trim().toLowerCase()
    if (value === "") return fallback
    if ((choices as ReadonlyArray<string>).includes(value)) return value as A
    throw new Error(`expected ${choices.join(", ")}, got ${text}`)
  })

/** The log settings from the environment; `stdoutIsTerminal` decides the default format. */
export const logSettingsFromEnv = (
  stdoutIsTerminal: boolean = process.stdout.isTTY === true
): Effect.Effect<LogSettings, Config.ConfigError | InvalidSetting> =>
  Effect.gen(function*() {
    const format = yield* oneOf(
      "LM_LOG_FORMAT",
      logFormats,
      yield* Config.String("LM_LOG_FORMAT").pipe(Config.withDefault("")),
      stdoutIsTerminal ? "text" : "json"
    )
    const level = yield* oneOf(
      "LM_LOG_LEVEL",
      Object.keys(logLevels) as ReadonlyArray<LogLevelName>,
      yield* Config.String("LM_LOG_LEVEL").pipe(Config.withDefault("")),
      "info"
    )
    const access = yield* Config.String("LM_ACCESS_LOG").pipe(Config.withDefault(""))
    const accessLog = yield* readSetting("LM_ACCESS_LOG", () => parseSwitch(access, false))
    return { format, level, accessLog }
  })
