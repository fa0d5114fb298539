/**
 * The dashboard: the analytics overview as tiles (licenses by status, seats, validations, activations,
 * subscriptions and MRR by currency, expiring soon, the revocation list), validations over time as a chart (a
 * period and hour or day buckets, kept in the URL), the next licenses to expire within 30 days, the anomalies
 * current now, app versions and the most validated licenses. Every part loads at once, side by side.
 */
import type { ComponentChildren } from "preact"
import { useState } from "preact/hooks"
import { call, names } from "../api.js"
import { ValidationsChart } from "../Chart.js"
import { decodeCrl } from "../crl.js"
import { formatDate, formatMoney, formatNumber, formatPercent, formatTime } from "../format.js"
import { Link, queryString, useQueryState } from "../router.js"
import { Badge, ErrorNote, Loading, Page, Panel, Table, useLoad, useSigned } from "../ui.js"

type Period = (typeof names.analyticsPeriods)[number]
type Interval = (typeof names.analyticsIntervals)[number]

const periodDays: Record<Period, number> = { "7d": 7, "30d": 30, "90d": 90 }
const periodLabels: Record<Period, string> = { "7d": "7 days", "30d": "30 days", "90d": "90 days" }

/** Hour buckets of a period above the API's 1000: such a chart is drawn by day. */
const hourlyAllowed = (period: Period) => periodDays[period] * 24 <= 1000

const Tile = (props: { readonly label: string; readonly value: string; readonly children?: ComponentChildren; readonly id?: string }) => (
  <div class="tile" data-tile={props.id}>
    <span class="tile-label">{props.label}</span>
    <strong class="tile-value">{props.value}</strong>
    {props.children === undefined ? null : <div class="tile-detail">{props.children}</div>}
  </div>
)

const subscriptionCount = (n: number) => `${formatNumber(n)} ${n === 1 ? "subscription" : "subscriptions"}`

export const Dashboard = () => {
  const { api } = useSigned()
  const { values, set } = useQueryState()
  const period: Period = (names.analyticsPeriods as ReadonlyArray<string>).includes(values.period ?? "") ? values.period as Period : "30d"
  const wanted: Interval = values.interval === "hour" ? "hour" : "day"
  const interval: Interval = wanted === "hour" && hourlyAllowed(period) ? "hour" : "day"

  const overview = useLoad((signal) => call(api.analytics.overview({ query: { period } }), { signal }), [period])
  const series = useLoad((signal) => {
    const to = new Date()
    const from = new Date(to.getTime() - periodDays[period] * 86_400_000)
    return call(api.analytics.validations({ query: { from: from.getTime(), to: to.getTime(), interval } }), { signal })
  }, [period, interval])
  // The next ten to expire, from the license list (a page of it is cheaper than the analytics' whole list).
  const [soon] = useState(() => {
    const now = Date.now()
    return { expires_after: now, expires_before: now + 30 * 86_400_000, orderby: "expires_at" as const, order: "asc" as const }
  })
  const expiring = useLoad((signal) => call(api.licenses.list({ query: { ...soon, per_page: 10 } }), { signal }), [])
  const anomalies = useLoad((signal) => call(api.analytics.anomalies(), { signal }), [])
  const crl = useLoad((signal) => call(api.client.crl({ headers: {} }), { signal }), [])
  const loaded = [overview, series, expiring, anomalies, crl].every((part) => !part.loading)

  const o = overview.data?.data
  const crlPayload = crl.data?.data === undefined ? undefined : decodeCrl(crl.data.data.crl)
  return (
    <Page title="Dashboard" busy={!loaded}>
      <div class="dashboard" data-loaded={loaded ? "true" : undefined}>
        <div class="toolbar" role="group" aria-label="Period">
          {names.analyticsPeriods.map((p) => (
            <button type="button" key={p} aria-pressed={p === period} onClick={() => set({ period: p })}>{periodLabels[p]}</button>
          ))}
        </div>
        <ErrorNote error={overview.error} />
        {o === undefined ? (overview.loading ? <Loading /> : null) : (
          <div class="tiles">
            <Tile id="licenses" label="Licenses" value={formatNumber(o.licenses.total)}>
              <ul class="by-status">
                {Object.entries(o.licenses.by_status).filter(([, n]) => n > 0).map(([status, n]) => (
                  <li key={status}><Link href={`/licenses${queryString({ status })}`}><Badge value={status} /> {formatNumber(n)}</Link></li>
                ))}
              </ul>
            </Tile>
            <Tile id="seats" label="Seat utilisation" value={formatPercent(o.seats.utilization)}>
              <meter min={0} max={1} value={o.seats.utilization ?? 0} aria-label="Seat utilisation" />
              <span>{formatNumber(o.seats.active_machines)} of {formatNumber(o.seats.total_seats)} seats in use</span>
            </Tile>
            <Tile id="validations" label={`Validations, ${periodLabels[period]}`} value={formatNumber(o.validations.total)}>
              <span>{formatNumber(o.validations.valid)} valid · {formatNumber(o.validations.invalid)} refused</span>
            </Tile>
            <Tile id="activations" label={`Activations, ${periodLabels[period]}`} value={formatNumber(o.activations)} />
            <Tile id="mrr" label="Monthly recurring revenue" value={o.subscriptions.mrr.length === 0 ? "—" : formatMoney(o.subscriptions.mrr[0]!.amount, o.subscriptions.mrr[0]!.currency)}>
              {o.subscriptions.mrr.length <= 1 ? null : (
                <ul>{o.subscriptions.mrr.slice(1).map((m) => <li key={m.currency}>{formatMoney(m.amount, m.currency)}</li>)}</ul>
              )}
              <span>{subscriptionCount(Object.values(o.subscriptions.by_status).reduce((a, b) => a + b, 0))}</span>
            </Tile>
            <Tile id="expiring" label="Expiring in 30 days" value={formatNumber(o.expiring.in_30_days)}>
              <span>{formatNumber(o.expiring.in_7_days)} within 7 days</span>
            </Tile>
            <Tile id="crl" label="Revocation list" value={crlPayload === undefined ? "—" : `#${formatNumber(crlPayload.seq)}`}>
              {crlPayload === undefined ? <ErrorNote error={crl.error} /> : (
                <span>
                  {formatNumber(crlPayload.revoked_keys.length)} revoked · {formatNumber(crlPayload.suspended_keys.length)} suspended keys ·{" "}
                  {formatNumber(crlPayload.revoked_machines.length)} revoked machines
                </span>
              )}
            </Tile>
          </div>
        )}

        <Panel
          title="Validations over time"
          actions={
            <div class="toolbar" role="group" aria-label="Buckets">
              {names.analyticsIntervals.map((i) => (
                <button
                  type="button"
                  key={i}
                  aria-pressed={i === interval}
                  disabled={i === "hour" && !hourlyAllowed(period)}
                  onClick={() => set({ interval: i, period })}
                >
                  {i === "hour" ? "By hour" : "By day"}
                </button>
              ))}
            </div>
          }
        >
          <ErrorNote error={series.error} />
          {series.data === undefined ? <Loading /> : <ValidationsChart series={series.data.data} label={`Validations by ${interval}, last ${periodLabels[period]}`} />}
        </Panel>

        <div class="columns">
          <Panel
            title="Expiring within 30 days"
            actions={expiring.data === undefined || expiring.data.meta.total <= 10 ? undefined : (
              <Link href={`/licenses${queryString({ ...soon, expires_after: new Date(soon.expires_after).toISOString(), expires_before: new Date(soon.expires_before).toISOString() })}`}>
                All {formatNumber(expiring.data.meta.total)}
              </Link>
            )}
          >
            <ErrorNote error={expiring.error} />
            {expiring.data === undefined ? <Loading /> : (
              <Table
                caption="Licenses expiring within 30 days"
                head={["License", "Status", "Expires"]}
                empty="No license expires within 30 days."
                rows={expiring.data.data.licenses.map((l) => ({
                  key: l.id,
                  cells: [<Link href={`/licenses/${l.license_key}`}><code>{l.license_key}</code></Link>, <Badge value={l.status} />, formatDate(l.expires_at)]
                }))}
              />
            )}
          </Panel>
          <Panel title="Anomalies">
            <ErrorNote error={anomalies.error} />
            {anomalies.data === undefined ? <Loading /> : (
              <Table
                caption="Anomalies"
                head={["License", "Type", "Detail", "Detected"]}
                empty="No anomaly now."
                rows={anomalies.data.data.anomalies.map((a, i) => ({
                  key: i,
                  cells: [<Link href={`/licenses/${a.license_key}`}><code>{a.license_key}</code></Link>, a.type.replace(/_/g, " "), a.detail, formatTime(a.detected_at)]
                }))}
              />
            )}
          </Panel>
        </div>

        {o === undefined ? null : (
          <div class="columns">
            <Panel title="App versions in use">
              <Table
                caption="App versions of the machines holding a seat"
                head={["Version", "Machines"]}
                empty="No machine holds a seat."
                rows={o.app_versions.map((v) => ({ key: v.app_version ?? "", cells: [v.app_version ?? "unknown", formatNumber(v.machines)] }))}
              />
            </Panel>
            <Panel title={`Most validated, ${periodLabels[period]}`}>
              <Table
                caption="Licenses with the most validations"
                head={["License", "Validations"]}
                empty="No validation in this period."
                rows={o.top_licenses.map((t) => ({
                  key: t.license_key,
                  cells: [<Link href={`/licenses/${t.license_key}`}><code>{t.license_key}</code></Link>, formatNumber(t.validations)]
                }))}
              />
            </Panel>
          </div>
        )}
      </div>
    </Page>
  )
}
