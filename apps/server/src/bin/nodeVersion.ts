/**
 * The Node.js version check of `lm`'s entry. It imports nothing and uses only syntax every Node.js since 12 parses,
 * so it runs (and says what to do) where the server's dependencies would not even load.
 */

/** Whether `version` (`process.versions.node`, e.g. `20.20.2`) satisfies `engines` (`>=22.19`); true when unreadable. */
export const satisfiesEngines = (version: string, engines: string): boolean => {
  const need = /^>=\s*(\d+)(?:\.(\d+))?/.exec(engines.trim())
  const have = /^v?(\d+)\.(\d+)/.exec(version)
  if (need === null || have === null) return true
  const [needMajor, needMinor] = [Number(need[1]), Number(need[2] ?? "0")]
  const [major, minor] = [Number(have[1]), Number(have[2])]
  return major > needMajor || (major === needMajor && minor >= needMinor)
}

/** The one line `lm` prints on a Node.js older than `engines` requires. */
export const tooOldMessage = (version: string, engines: string): string =>
  `lm needs Node.js ${engines} (this is ${version}): run it with \`npm start\` or \`npm run lm -- <command>\` from the ` +
  `project folder, which use the project's own Node.js, or put a newer node first on PATH.`
