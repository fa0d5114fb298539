/**
 * A large store for the benchmarks that read it (`analytics.ts`, `console.ts`): licenses and an event log seeded
 * directly with SQL (`generate_series`), as the engine would have written them.
 */

const batch = 1_000_000

/** The key of license `n` (an SQL expression): `B000-0000-0000-0042` for 42. */
const keySql = (n: string) => {
  const k = `('B' || lpad((${n})::text, 15, '0'))`
  return `substr(${k}, 1, 4) || '-' || substr(${k}, 5, 4) || '-' || substr(${k}, 9, 4) || '-' || substr(${k}, 13, 4)`
}

/**
 * The SQL that seeds a migrated store with `licenses` licenses and `events` event-log entries over the last 90 days,
 * with the hourly counters and top-license totals the event log's writer would have kept (see the comment at the top
 * of analytics.ts), in batches of a million rows.
 */
export const seedStatements = (licenses: number, events: number): ReadonlyArray<string> => {
  const out: Array<string> = []
  for (let from = 1; from <= licenses; from += batch) {
    const to = Math.min(licenses, from + batch - 1)
    out.push(`
      INSERT INTO lm_licenses (key, state, product_id, max_activations, overage_strategy, is_floating, lease_duration,
        require_heartbeat, heartbeat_interval, expires_at, grace_days, grace_ends_at, source, created_at, updated_at)
      SELECT ${keySql("i")}, 'issued', i % 50, 5, 'deny', false, 0, false, 0,
        now() + (i % 365) * interval '1 day', 0, now() + (i % 365) * interval '1 day', 'api', now(), now()
      FROM generate_series(${from}, ${to}) AS i`)
  }
  for (let from = 1; from <= events; from += batch) {
    const to = Math.min(events, from + batch - 1)
    out.push(`
      INSERT INTO lm_activity (kind, license_id, license_key, product_id, fingerprint, ip_address, result, at)
      SELECT CASE WHEN i % 10 = 0 THEN 'activate' ELSE 'validate' END, l, ${keySql("l")}, l % 50,
        'fp-' || (i % 7), '10.0.' || (i % 250) || '.1',
        CASE WHEN i % 10 = 0 THEN 'activated' WHEN i % 7 = 0 THEN 'fingerprint_not_activated' ELSE 'valid' END,
        now() - ((${events} - i)::float8 / ${events}) * interval '90 days'
      FROM generate_series(${from}, ${to}) AS i, LATERAL (SELECT 1 + (hashint4(i)::bigint & 2147483647) % ${licenses} AS l) AS pick
      ORDER BY i`)
  }
  // The counters the writer would have added, entry by entry (see Analytics.hourlyCountsOf).
  const counters = (scope: string, id: string) => `
    INSERT INTO lm_activity_hourly (scope, scope_id, hour, valid, invalid, refused, activations)
    SELECT '${scope}', ${id}, date_trunc('hour', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
      count(*) FILTER (WHERE kind = 'validate' AND result = 'valid'),
      count(*) FILTER (WHERE kind = 'validate' AND result <> 'valid'),
      count(*) FILTER (WHERE result NOT IN ('valid', 'activated', 'already_active', 'deactivated', 'ok')),
      count(*) FILTER (WHERE kind = 'activate' AND result = 'activated')
    FROM lm_activity GROUP BY 1, 2, 3`
  out.push(counters("license", "coalesce(license_id, 0)"), counters("product", "coalesce(product_id, -1)"))
  // The top-license totals the writer would have added: each period's validations from its window's start on
  // (a store migrated before the seed has the windows of migration 0012 and no totals yet).
  out.push(`
    INSERT INTO lm_top_totals (period, license_id, validations)
    SELECT w.period, h.scope_id, sum(h.valid + h.invalid)
    FROM lm_top_windows w JOIN lm_activity_hourly h ON h.scope = 'license' AND h.scope_id <> 0 AND h.hour >= w.window_start
    GROUP BY w.period, h.scope_id HAVING sum(h.valid + h.invalid) > 0
    ON CONFLICT (period, license_id) DO UPDATE SET validations = EXCLUDED.validations`)
  // VACUUM summarizes the BRIN ranges of the rows added since the index was made (autovacuum does so on a live
  // log; an unsummarized range matches every query) and sets the visibility map the index-only scans need.
  out.push("VACUUM ANALYZE")
  return out
}
