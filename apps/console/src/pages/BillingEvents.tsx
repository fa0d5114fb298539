/**
 * Billing events: what Stripe, Paddle Billing and Lemon Squeezy sent (CONTRACT §20), newest first, with the outcome
 * of each (applied, duplicate, stale, unmatched, ignored); filters by outcome and provider live in the URL.
 */
import { call, names } from "../api.js"
import { formatTime } from "../format.js"
import { Link, useQueryState } from "../router.js"
import { Badge, defined, Filters, Listed, Page, Select, Table, useLoad, useSigned } from "../ui.js"
import { numberParam } from "./Licenses.js"

type Outcome = (typeof names.billingEventOutcomes)[number]
type Provider = (typeof names.billingProviders)[number]

export const BillingEvents = () => {
  const { api } = useSigned()
  const { values } = useQueryState()
  const query = defined({
    outcome: values.outcome as Outcome | undefined,
    provider: values.provider as Provider | undefined,
    page: numberParam(values.page),
    per_page: numberParam(values.per_page)
  })
  const list = useLoad((signal) => call(api.billing.events({ query }), { signal }), [location.search])
  return (
    <Page title="Billing events" busy={list.loading}>
      <Filters label="Filter billing events" names={["outcome", "provider"]}>
        <Select name="outcome" label="Outcome" options={names.billingEventOutcomes} empty="Any" value={values.outcome ?? ""} />
        <Select name="provider" label="Provider" options={names.billingProviders} empty="Any" value={values.provider ?? ""} />
      </Filters>
      <Listed list={list}>
        {(answer) => (
          <Table
            caption="Billing events"
            head={["Received", "Provider", "Event", "Provider subscription", "Subscription", "Outcome"]}
            empty="No billing event matches."
            rows={answer.data.events.map((e, i) => ({
              key: `${e.provider}:${e.id}:${e.received_at}:${i}`,
              cells: [
                formatTime(e.received_at),
                e.provider,
                <span title={e.id}>{e.type}</span>,
                e.external_id === null ? "—" : <code>{e.external_id}</code>,
                e.subscription_id === null ? "—" : <Link href={`/subscriptions/${e.subscription_id}`}>#{e.subscription_id}</Link>,
                <Badge value={e.outcome} />
              ]
            }))}
          />
        )}
      </Listed>
    </Page>
  )
}
