/**
 * Rate limits (CONTRACT §11, §14): token buckets whose burst equals the per-minute limit and which refill
 * continuously. A bucket is kept in its GCRA form, one number per key: its theoretical arrival time `tat` (epoch
 * ms). With `T = 60,000 / limit` ms per token, the bucket holds `(now - tat) / T + burst` tokens, at most the
 * burst (a bucket idle long enough is full: `tat` is taken as `max(tat, now)`). Taking `n` tokens advances
 * `tat` by `n × T`. Because a take is an addition, takes made in several processes can be summed and applied
 * later to a shared `tat` (`advance`), which is what sharing limits between processes rests on; a `tat` pushed
 * further than the burst allows is a debt, repaid by refusing until time catches up.
 * Pure functions of (state, limit, now).
 */

/** A limit: requests a minute, which is also the burst. */
export interface RateLimit {
  readonly perMinute: number
}

/** Milliseconds one token takes to refill. */
export const tokenMillis = (limit: RateLimit): number => 60_000 / limit.perMinute

/**
 * The shared operation: `tat` advanced by `cost` ms from `max(tat, now)`, what a store applies atomically for a
 * batch of takes (`cost = n × tokenMillis`). An unknown key is a full bucket (`tat` = now).
 */
export const advance = (tat: number | undefined, now: number, cost: number): number =>
  Math.max(tat ?? now, now) + cost

/** Tokens a bucket holds at `now` (may be negative: a debt). */
export const tokens = (tat: number | undefined, limit: RateLimit, now: number): number =>
  tat === undefined || tat <= now ? limit.perMinute : limit.perMinute - (tat - now) / tokenMillis(limit)

/** The outcome of one request against a bucket. */
export type Take =
  | { readonly allowed: true; readonly tat: number }
  | {
    readonly allowed: false
    readonly tat: number | undefined
    /** Whole seconds until one token is back (at least 1): `Retry-After` and `data.retry_after`. */
    readonly retryAfterSeconds: number
  }

/**
 * Milliseconds until the bucket holds one token again; at most 0 (give or take rounding) while it holds one now.
 * One token is available while tat - now <= (burst - 1) × T.
 */
export const waitMillis = (tat: number | undefined, limit: RateLimit, now: number): number =>
  (tat ?? now) - now - (limit.perMinute - 1) * tokenMillis(limit)

/** Whether a bucket whose wait is `wait` ({@link waitMillis}) holds a token (a rounding tolerance included). */
export const holdsToken = (wait: number): boolean => wait <= 1e-9

/** Whole seconds of a wait, at least 1: `Retry-After` and `data.retry_after`. */
export const retryAfterSeconds = (wait: number): number => Math.max(1, Math.ceil(wait / 1000))

/** Takes one token if the bucket holds one; otherwise says how long until it does. */
export const take = (tat: number | undefined, limit: RateLimit, now: number): Take => {
  const wait = waitMillis(tat, limit, now)
  if (holdsToken(wait)) return { allowed: true, tat: advance(tat, now, tokenMillis(limit)) }
  return { allowed: false, tat, retryAfterSeconds: retryAfterSeconds(wait) }
}

/**
 * What the limits are: per client IP and per (IP, license key) on public routes, per API key on management ones,
 * and the failed management logins per client IP.
 */
export interface RateLimitSettings {
  /** `LM_RATE_LIMIT=off` turns every limit off. */
  readonly enabled: boolean
  /** `LM_RATE_LIMIT_PER_IP` (default 120 a minute). */
  readonly perIp: RateLimit
  /** `LM_RATE_LIMIT_PER_KEY` (default 60 a minute), per (client IP, license key). */
  readonly perKey: RateLimit
  /** `LM_RATE_LIMIT_PER_API_KEY` (default 600 a minute), per API key on management routes. */
  readonly perApiKey: RateLimit
  /**
   * `LM_RATE_LIMIT_AUTH_FAILURES` (default 10 a minute), per client IP: management requests whose credentials
   * match no key. Once they are spent, every request with credentials from that IP is refused (429), a right key's
   * too, until a token is back: otherwise a guess that is not refused would be known to be right.
   */
  readonly authFailures: RateLimit
}

export const defaultRateLimitSettings: RateLimitSettings = {
  enabled: true,
  perIp: { perMinute: 120 },
  perKey: { perMinute: 60 },
  perApiKey: { perMinute: 600 },
  authFailures: { perMinute: 10 }
}

/** The kinds of bucket; each names its keys apart from the others'. */
export const rateLimitScopes = ["ip", "key", "api_key", "auth_failure"] as const
export type RateLimitScope = typeof rateLimitScopes[number]

/**
 * The name of a bucket, e.g. `ip:10.0.0.1`, `key:10.0.0.1|ABCD-...`, `api_key:12` (the key's id),
 * `auth_failure:10.0.0.1`.
 */
export const bucketName = (scope: RateLimitScope, first: string, second?: string): string =>
  second === undefined ? `${scope}:${first}` : `${scope}:${first}|${second}`
