/**
 * How a setting is read from the environment: a value that cannot be read refuses the start with an
 * `InvalidSetting` naming the variable (`LM_TRUST_PROXY: expected ...`), never a silent default.
 */
import { Config, Effect } from "effect"
import { InvalidSetting } from "@lm/http"

/** Runs `read`; what it throws becomes the setting's `InvalidSetting`. */
export const readSetting = <A>(name: string, read: () => A): Effect.Effect<A, InvalidSetting> =>
  Effect.try({
    try: read,
    catch: (error) => new InvalidSetting({ name, message: `${name}: ${error instanceof Error ? error.message : error}` })
  })

/** A boolean setting: `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`; empty is `fallback`. */
export const parseSwitch = (value: string, fallback: boolean): boolean => {
  const text = value.trim().toLowerCase()
  if (text === "") return fallback
  if (text === "1" || text === "true" || text === "yes" || text === "on") return true
  if (text === "0" || text === "false" || text === "no" || text === "off") return false
  throw new Error(`expected on or off (1/0, true/false, yes/no), got ${value}`)
}

/** An integer setting of at least 1, `fallback` when unset. */
export const positiveInt = (name: string, fallback: number) =>
  Effect.flatMap(Config.String(name).pipe(Config.withDefault("")), (text) =>
    readSetting(name, () => {
      if (text.trim() === "") return fallback
      const value = Number(text)
      if (!Number.isInteger(value) || value < 1) throw new Error(`expected a whole number of at least 1, got ${text}`)
      return value
    }))
