/**
 * Where the browser console's built files are (`apps/console`, served at `{base_url}/console/` by `@lm/http`),
 * from the environment.
 */
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Config, Effect } from "effect"
import type { InvalidSetting } from "@lm/http"
import { parseSwitch, readSetting } from "./Read.js"

/** The built console of this repository (`apps/console/dist`), from `apps/server/{src,dist}/settings/`. */
export const defaultConsoleDir = fileURLToPath(new URL("../../../console/dist/", import.meta.url))

/**
 * `LM_CONSOLE` (default on; `off` serves none of it: 404 `rest_no_route`) and `LM_CONSOLE_DIR` (default the
 * repository's `apps/console/dist`): the folder of the console's built files, or undefined when it is off.
 */
export const consoleDirFromEnv: Effect.Effect<string | undefined, Config.ConfigError | InvalidSetting> = Effect.gen(function*() {
  const setting = yield* Config.String("LM_CONSOLE").pipe(Config.withDefault(""))
  const enabled = yield* readSetting("LM_CONSOLE", () => parseSwitch(setting, true))
  if (!enabled) return undefined
  const dirSetting = yield* Config.String("LM_CONSOLE_DIR").pipe(Config.withDefault(""))
  return dirSetting === "" ? defaultConsoleDir : path.resolve(dirSetting)
})
