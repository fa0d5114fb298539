/**
 * The outside services some suites need, named by environment variables: a PostgreSQL server (`DATABASE_URL`)
 * and a Redis (`REDIS_URL`). On a developer's machine a suite whose service is not named is skipped (the URL
 * reads as ""). In CI (`CI` set, as `.ci/run` does) a missing one fails the file that needs it instead, saying
 * which variable to set, so that a CI run never passes with those suites silently skipped.
 */

/** Whether this run is a CI run: `CI` set to anything but "", "0" or "false". */
export const inCi = (env: NodeJS.ProcessEnv = process.env): boolean => {
  const ci = (env.CI ?? "").trim().toLowerCase()
  return ci !== "" && ci !== "0" && ci !== "false"
}

const examples = {
  DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postgres",
  REDIS_URL: "redis://127.0.0.1:6379"
} as const

/** The variable's URL, or "" when it is not set (outside CI only: in CI that throws). */
export const serviceUrl = (variable: keyof typeof examples, env: NodeJS.ProcessEnv = process.env): string => {
  const url = (env[variable] ?? "").trim()
  if (url === "" && inCi(env)) {
    throw new Error(`${variable} is not set, and CI is: the tests that need it must run in CI, not be skipped. Set ${variable} (e.g. ${examples[variable]}), as .ci/run does.`)
  }
  return url
}
