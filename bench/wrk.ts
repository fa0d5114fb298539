/**
 * wrk, the compiled load generator of the quick bench (`quick.ts`) and the profile (`profile.ts`): installing it
 * when missing, its Lua scripts and one run's figures.
 *
 * One wrk thread holds every connection (`-t1`), so the load generator takes one core at most. Each script ends
 * with a `done` hook that prints one line, `WRK {json}`, read by {@link runWrk}: requests, duration, errors,
 * latency percentiles in µs (wrk records every response's latency, non-2xx included) and, for the cycle script,
 * what the load generator knows of each fingerprint when it stopped (for the seat check).
 */
import { execFile, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"

/** Whether `wrk` runs. */
const wrkRuns = () => spawnSync("wrk", ["--version"]).error === undefined

/** Whether `sudo` runs without asking for a password (a CI runner's). */
const sudoWithoutPassword = () => spawnSync("sudo", ["-n", "true"]).status === 0

/**
 * Makes sure wrk is installed: when it is missing, says so on stderr and installs it with apt-get as root (or
 * through `sudo` when it needs no password, as on a CI runner). Otherwise fails with a message saying how to
 * install it.
 */
export const ensureWrk = (log: (line: string) => void): void => {
  try {
    installWrk(log)
  } catch (error) {
    // One line, no stack: what to do is in the message.
    log(error instanceof Error ? error.message : String(error))
    process.exit(1)
  }
}

const installWrk = (log: (line: string) => void): void => {
  if (wrkRuns()) return
  const root = process.getuid?.() === 0
  if (!root && !sudoWithoutPassword()) {
    throw new Error("wrk is not installed, and this user cannot install it: run `apt-get install -y wrk` as root (or `brew install wrk`), then again")
  }
  const command = root ? ["apt-get", "install", "-y", "wrk"] : ["sudo", "apt-get", "install", "-y", "wrk"]
  log(`wrk is not installed: installing it (${command.join(" ")})`)
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" }
  let result = spawnSync(command[0]!, command.slice(1), { stdio: ["ignore", "inherit", "inherit"], env })
  if (result.status !== 0) {
    // A fresh runner may not have read the package lists yet.
    const update = root ? ["apt-get", "update"] : ["sudo", "apt-get", "update"]
    log(`installing wrk failed; running ${update.join(" ")} and trying again`)
    spawnSync(update[0]!, update.slice(1), { stdio: ["ignore", "inherit", "inherit"], env })
    result = spawnSync(command[0]!, command.slice(1), { stdio: ["ignore", "inherit", "inherit"], env })
  }
  if (!wrkRuns()) throw new Error("wrk is not installed and could not be installed (apt-get install -y wrk)")
  log("wrk installed")
}

/** The `done` hook shared by the scripts: one `WRK {json}` line; `extra` is Lua adding fields to `out`. */
const doneHook = (extra: string) => `
local threads = {}
setup = function(thread) threads[#threads + 1] = thread end

local function json(value)
  local t = type(value)
  if t == "table" then
    local parts, isList = {}, #value > 0 or next(value) == nil
    if isList then
      for _, v in ipairs(value) do parts[#parts + 1] = json(v) end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    for k, v in pairs(value) do parts[#parts + 1] = string.format("%q", tostring(k)) .. ":" .. json(v) end
    return "{" .. table.concat(parts, ",") .. "}"
  elseif t == "string" then
    return string.format("%q", value)
  elseif t == "number" then
    return string.format("%.17g", value)
  end
  return tostring(value)
end

done = function(summary, latency, requests)
  local out = {
    requests = summary.requests,
    duration_us = summary.duration,
    errors = { connect = summary.errors.connect, read = summary.errors.read, write = summary.errors.write,
      status = summary.errors.status, timeout = summary.errors.timeout },
    p50_us = latency:percentile(50), p99_us = latency:percentile(99), max_us = latency.max
  }
  ${extra}
  io.write("WRK " .. json(out) .. "\\n")
end
`

/**
 * POST `{base}/validate` with `{license_key}` of each key in turn (arguments: the path of the API base, then the
 * keys), the requests formatted once.
 */
export const validateScript = `-- POST /validate, one license key after the other (bench/wrk.ts)
local requests, count, turn = {}, 0, 0
init = function(args)
  local headers = { ["Content-Type"] = "application/json" }
  for i = 2, #args do
    requests[#requests + 1] = wrk.format("POST", args[1] .. "/validate", headers, '{"license_key":"' .. args[i] .. '"}')
  end
  count = #requests
end
request = function()
  turn = turn % count + 1
  return requests[turn]
end
${doneHook("")}`

/**
 * Activate+deactivate cycles on one license (arguments: the path of the API base, the license key, the size of
 * the fingerprint pool). wrk does not say which connection asks for a request, so the cycle is kept by the
 * answers: an answered activation (200/201, recognised by the fingerprint its machine carries) queues its
 * fingerprint, and the next request deactivates a queued fingerprint when there is one, else activates a free
 * one; an answered deactivation frees its fingerprint. So a fingerprint is deactivated only after its activation
 * was answered, never sent twice at once, and at most one per connection holds a seat (with the queue, never
 * more fingerprints than connections). A cycle is one answered deactivation.
 *
 * At the end, `state` is what the load generator knows of each fingerprint it used: `active` (activation
 * answered, no deactivation sent: must hold a seat), `activating` / `deactivating` (a request in flight when wrk
 * stopped, or refused: may or may not hold one). A fingerprint not listed holds none.
 */
export const cycleScript = `-- activate+deactivate cycles on one license (bench/wrk.ts)
local base, key
free, queue, state = {}, {}, {}
counts = { activated = 0, deactivated = 0, unrecognised = 0 }
local fresh = 0
local headers = { ["Content-Type"] = "application/json" }
local activations, deactivations = {}, {}

init = function(args)
  base, key = args[1], args[2]
  for i = tonumber(args[3]) - 1, 0, -1 do free[#free + 1] = "cycle-" .. i end
end

local function formatted(cache, route, fp)
  local text = cache[fp]
  if text == nil then
    text = wrk.format("POST", base .. route, headers, '{"license_key":"' .. key .. '","fingerprint":"' .. fp .. '"}')
    cache[fp] = text
  end
  return text
end

request = function()
  local fp = table.remove(queue)
  if fp ~= nil then
    state[fp] = "deactivating"
    return formatted(deactivations, "/deactivate", fp)
  end
  fp = table.remove(free)
  if fp == nil then
    -- Refused requests keep their fingerprint out of the pool (their answer does not name it).
    fresh = fresh + 1
    fp = "cycle-extra-" .. fresh
  end
  state[fp] = "activating"
  return formatted(activations, "/activate", fp)
end

response = function(status, headers, body)
  local fp = string.match(body, '"fingerprint":"([^"]+)"')
  local was = fp and state[fp]
  if was == "activating" and (status == 200 or status == 201) then
    state[fp] = "active"
    queue[#queue + 1] = fp
    counts.activated = counts.activated + 1
  elseif was == "deactivating" and status == 200 then
    state[fp] = nil
    free[#free + 1] = fp
    counts.deactivated = counts.deactivated + 1
  else
    counts.unrecognised = counts.unrecognised + 1
  end
end
${
  doneHook(`
  local t = threads[1]
  out.counts = t:get("counts")
  out.state = t:get("state")`)
}`

/** The figures of one wrk run. */
export interface WrkRun {
  readonly requests: number
  readonly seconds: number
  /** Responses per second. */
  readonly rps: number
  /** Latency percentiles in ms (every response). */
  readonly p50: number
  readonly p99: number
  /** Non-2xx/3xx responses. */
  readonly non2xx: number
  /** Socket errors: connect, read, write, timeout. */
  readonly errors: number
  /** Cycle script only: answered activations and deactivations, answers it did not recognise. */
  readonly counts?: { readonly activated: number; readonly deactivated: number; readonly unrecognised: number }
  /** Cycle script only: what the load generator knows of each fingerprint it used (see {@link cycleScript}). */
  readonly state?: Readonly<Record<string, "active" | "activating" | "deactivating">>
}

const scriptFolder = fs.mkdtempSync(path.join(os.tmpdir(), "lm-bench-wrk-"))
process.on("exit", () => fs.rmSync(scriptFolder, { recursive: true, force: true }))
const scriptFiles = new Map<string, string>()

/** The path of a script's file (written once per process). */
const scriptFile = (script: string): string => {
  let file = scriptFiles.get(script)
  if (file === undefined) {
    file = path.join(scriptFolder, `script-${scriptFiles.size}.lua`)
    fs.writeFileSync(file, script)
    scriptFiles.set(script, file)
  }
  return file
}

/** One wrk run of `seconds` against `url` (its origin is used; `args` go to the script's `init`). */
export const runWrk = async (options: {
  readonly url: string
  readonly script: string
  readonly args: ReadonlyArray<string>
  readonly seconds: number
  readonly connections: number
}): Promise<WrkRun> => {
  const origin = new URL(options.url).origin
  const { stdout } = await promisify(execFile)(
    "wrk",
    ["-t1", `-c${options.connections}`, `-d${options.seconds}s`, "--timeout", "10s", "-s", scriptFile(options.script), origin, "--", ...options.args],
    { maxBuffer: 64 * 1024 * 1024 }
  )
  const line = stdout.split("\n").find((l) => l.startsWith("WRK "))
  if (line === undefined) throw new Error(`wrk printed no WRK line:\n${stdout}`)
  const out = JSON.parse(line.slice(4)) as {
    requests: number
    duration_us: number
    errors: { connect: number; read: number; write: number; status: number; timeout: number }
    p50_us: number
    p99_us: number
    counts?: WrkRun["counts"]
    state?: WrkRun["state"] | ReadonlyArray<never>
  }
  const seconds = out.duration_us / 1e6
  return {
    requests: out.requests,
    seconds,
    rps: out.requests / seconds,
    p50: out.p50_us / 1000,
    p99: out.p99_us / 1000,
    non2xx: out.errors.status,
    errors: out.errors.connect + out.errors.read + out.errors.write + out.errors.timeout,
    ...(out.counts === undefined ? {} : { counts: out.counts }),
    // An empty Lua table prints as a list.
    ...(out.state === undefined ? {} : { state: Array.isArray(out.state) ? {} : out.state as WrkRun["state"] & object })
  }
}
