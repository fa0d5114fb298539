/**
 * Subscriptions: the list with its filters (in the URL) and a new subscription; one subscription with its license,
 * its actions (pause, resume, cancel now or at the period end, renew early, switch plan), its edit form and its
 * renewal history.
 */
import { call, names, type Subscription } from "../api.js"
import { formatMoney, formatNumber, formatTime } from "../format.js"
import { Link, navigate, useQueryState } from "../router.js"
import { Action, Badge, defined, Disclosure, ErrorNote, Facts, Field, Filters, Form, Listed, Loading, localInputValue, Page, Panel, Select, Table, useLoad, useSigned } from "../ui.js"
import { numberParam } from "./Licenses.js"

type BillingPeriod = (typeof names.billingPeriods)[number]

const plan = (s: { readonly amount: string; readonly currency: string; readonly billing_interval: number; readonly billing_period: string }) =>
  `${formatMoney(s.amount, s.currency)} every ${s.billing_interval === 1 ? "" : `${formatNumber(s.billing_interval)} `}${s.billing_period}${s.billing_interval === 1 ? "" : "s"}`

export const Subscriptions = () => {
  const { api, canWrite } = useSigned()
  const { values } = useQueryState()
  const query = defined({
    status: values.status as (typeof names.subscriptionStatuses)[number] | undefined,
    user_id: numberParam(values.user_id),
    product_id: numberParam(values.product_id),
    page: numberParam(values.page),
    per_page: numberParam(values.per_page)
  })
  const list = useLoad((signal) => call(api.subscriptions.list({ query }), { signal }), [location.search])
  return (
    <Page title="Subscriptions" busy={list.loading}>
      {canWrite ? (
        <Disclosure summary="New subscription">
          <Form
            label="New subscription"
            submitLabel="Create subscription"
            onSubmit={async (v) => {
              const created = await call(api.subscriptions.create({
                payload: {
                  user_id: v.int("user_id") as number,
                  billing_period: (v.text("billing_period") ?? "month") as BillingPeriod,
                  billing_interval: v.int("billing_interval") ?? 1,
                  amount: v.text("amount") ?? "",
                  currency: (v.text("currency") ?? "").toUpperCase(),
                  ...defined({
                    license_key: v.text("license_key"),
                    product_id: v.int("product_id"),
                    payment_method: v.text("payment_method"),
                    trial_days: v.int("trial_days")
                  })
                }
              }))
              navigate(`/subscriptions/${created.data.id}`)
            }}
          >
            <div class="fields">
              <Field name="user_id" label="User id" inputMode="numeric" required />
              <Field name="amount" label="Amount" inputMode="decimal" placeholder="29.99" required />
              <Field name="currency" label="Currency" placeholder="USD" maxLength={3} required />
              <Select name="billing_period" label="Every" options={names.billingPeriods} value="month" />
              <Field name="billing_interval" label="Interval" inputMode="numeric" defaultValue="1" />
              <Field name="product_id" label="Product id" inputMode="numeric" />
              <Field name="license_key" label="Existing license key" hint="Empty: a new license is made" spellcheck={false} />
              <Field name="trial_days" label="Trial days" inputMode="numeric" />
              <Field name="payment_method" label="Payment method" />
            </div>
          </Form>
        </Disclosure>
      ) : null}
      <Filters label="Filter subscriptions" names={["status", "user_id", "product_id"]}>
        <Select name="status" label="Status" options={names.subscriptionStatuses} empty="Any" value={values.status ?? ""} />
        <Field name="user_id" label="User" inputMode="numeric" defaultValue={values.user_id ?? ""} />
        <Field name="product_id" label="Product" inputMode="numeric" defaultValue={values.product_id ?? ""} />
      </Filters>
      <Listed list={list}>
        {(answer) => (
          <Table
            caption="Subscriptions"
            head={["Id", "Status", "User", "Plan", "Period ends", "Next payment"]}
            empty="No subscription matches."
            rows={answer.data.subscriptions.map((s) => ({
              key: s.id,
              cells: [<Link href={`/subscriptions/${s.id}`}>#{s.id}</Link>, <Badge value={s.status} />, s.user_id, plan(s), formatTime(s.current_period_end), formatTime(s.next_payment_at)]
            }))}
          />
        )}
      </Listed>
    </Page>
  )
}

const SubscriptionActions = ({ s, onDone }: { readonly s: Subscription; readonly onDone: () => void }) => {
  const { api } = useSigned()
  const id = { params: { id: s.id } }
  const ended = s.status === "cancelled" || s.status === "expired"
  if (ended) return null
  return (
    <>
      {s.status === "active" || s.status === "trial" ? (
        <Action
          label="Pause"
          run={() => call(api.subscriptions.pause({ ...id, payload: {} }))}
          onDone={onDone}
          confirm={{ title: "Pause this subscription?", body: <p>It goes on hold and its license is suspended until it resumes.</p>, confirmLabel: "Pause" }}
        />
      ) : null}
      {s.status === "on-hold" || s.status === "pending-cancel" ? <Action label="Resume" run={() => call(api.subscriptions.resume({ ...id, payload: {} }))} onDone={onDone} /> : null}
      {s.status === "pending-cancel" ? null : (
        <Action
          label="Cancel at period end"
          run={() => call(api.subscriptions.cancel({ ...id, payload: { at_period_end: true } }))}
          onDone={onDone}
          confirm={{ title: "Cancel at the period end?", body: <p>It stays active until {formatTime(s.current_period_end)}, then ends.</p>, confirmLabel: "Cancel at period end" }}
        />
      )}
      <Action
        label="Cancel now"
        danger
        run={() => call(api.subscriptions.cancel({ ...id, payload: { at_period_end: false } }))}
        onDone={onDone}
        confirm={{ title: "Cancel this subscription now?", body: <p>It ends now, and so does its license: the next validation is refused.</p>, confirmLabel: "Cancel now" }}
      />
    </>
  )
}

export const SubscriptionDetail = ({ params }: { readonly params: Record<string, string> }) => {
  const { api, canWrite } = useSigned()
  const id = Number(params.id)
  const subscription = useLoad((signal) => call(api.subscriptions.get({ params: { id } }), { signal }), [id])
  const renewals = useLoad((signal) => call(api.subscriptions.renewals({ params: { id }, query: {} }), { signal }), [id, subscription.data])
  const s = subscription.data?.data
  const reload = () => subscription.reload()
  const ended = s === undefined || s.status === "cancelled" || s.status === "expired"
  return (
    <Page
      title={<>Subscription #{params.id} {s === undefined ? null : <Badge value={s.status} />}</>}
      busy={subscription.loading}
      actions={canWrite && s !== undefined ? <SubscriptionActions s={s} onDone={reload} /> : undefined}
    >
      <ErrorNote error={subscription.error} />
      {s === undefined ? (subscription.loading ? <Loading /> : null) : (
        <>
          <Panel title="Subscription">
            <Facts
              items={[
                ["Plan", plan(s)],
                ["License", <Link href={`/licenses/${s.license.license_key}`}><code>{s.license.license_key}</code></Link>],
                ["License status", <Badge value={s.license.status} />],
                ["User", s.user_id],
                ["Product", s.product_id],
                ["Current period", `${formatTime(s.current_period_start)} – ${formatTime(s.current_period_end)}`],
                ["Next payment", formatTime(s.next_payment_at)],
                ["Last payment", formatTime(s.last_payment_at)],
                ["Trial ends", formatTime(s.trial_end)],
                ["Ends", s.end_date === null ? (s.cancel_at_period_end ? "at the period end" : null) : formatTime(s.end_date)],
                ["Paused", formatTime(s.paused_at)],
                ["Cancelled", formatTime(s.cancelled_at)],
                ["Payment method", s.payment_method],
                ["Created", formatTime(s.created_at)]
              ]}
            />
          </Panel>
          {canWrite && !ended ? (
            <div class="columns">
              <Disclosure summary="Renew early">
                <Form
                  label="Renew early"
                  submitLabel="Record renewal"
                  onSubmit={async (v) => {
                    await call(api.subscriptions.renew({ params: { id }, payload: defined({ transaction_id: v.text("transaction_id") }) }))
                    reload()
                  }}
                >
                  <p class="hint">Records a paid renewal now and extends the period by one from its end.</p>
                  <Field name="transaction_id" label="Transaction id" />
                </Form>
              </Disclosure>
              <Disclosure summary="Switch plan">
                <Form
                  label="Switch plan"
                  submitLabel="Switch"
                  onSubmit={async (v) => {
                    await call(api.subscriptions.switch({
                      params: { id },
                      payload: {
                        amount: v.text("amount") ?? "",
                        ...defined({
                          billing_period: v.text("billing_period") as BillingPeriod | undefined,
                          billing_interval: v.int("billing_interval"),
                          max_activations: v.int("max_activations")
                        })
                      }
                    }))
                    reload()
                  }}
                >
                  <p class="hint">Prorated on the unused part of the period; a new period length starts a new period now.</p>
                  <div class="fields">
                    <Field name="amount" label="New amount" inputMode="decimal" required />
                    <Select name="billing_period" label="Every" options={names.billingPeriods} value={s.billing_period} />
                    <Field name="billing_interval" label="Interval" inputMode="numeric" defaultValue={String(s.billing_interval)} />
                    <Field name="max_activations" label="License seats" inputMode="numeric" />
                  </div>
                </Form>
              </Disclosure>
              <Disclosure summary="Edit">
                <Form
                  key={s.updated_at}
                  label="Edit subscription"
                  submitLabel="Save"
                  onSubmit={async (v) => {
                    await call(api.subscriptions.update({
                      params: { id },
                      payload: defined({
                        amount: v.text("amount"),
                        billing_period: v.text("billing_period") as BillingPeriod | undefined,
                        billing_interval: v.int("billing_interval"),
                        payment_method: v.textOrNull("payment_method"),
                        next_payment_at: v.time("next_payment_at") ?? null,
                        end_date: v.time("end_date") ?? null
                      })
                    }))
                    reload()
                  }}
                >
                  <div class="fields">
                    <Field name="amount" label="Amount" inputMode="decimal" defaultValue={s.amount} />
                    <Select name="billing_period" label="Every" options={names.billingPeriods} value={s.billing_period} />
                    <Field name="billing_interval" label="Interval" inputMode="numeric" defaultValue={String(s.billing_interval)} />
                    <Field name="payment_method" label="Payment method" defaultValue={s.payment_method ?? ""} />
                    <Field name="next_payment_at" label="Next payment" type="datetime-local" defaultValue={localInputValue(s.next_payment_at)} />
                    <Field name="end_date" label="End date" type="datetime-local" defaultValue={localInputValue(s.end_date)} />
                  </div>
                </Form>
              </Disclosure>
            </div>
          ) : null}
          <Panel title="Renewal history">
            <ErrorNote error={renewals.error} />
            {renewals.data === undefined ? <Loading /> : (
              <Table
                caption="Renewals"
                head={["When", "Type", "Amount", "Status", "Period", "Proration", "Transaction"]}
                empty="No renewal yet."
                rows={renewals.data.data.renewals.map((r) => ({
                  key: r.id,
                  cells: [
                    formatTime(r.created_at),
                    r.type.replace(/_/g, " "),
                    formatMoney(r.amount, r.currency),
                    <Badge value={r.status} />,
                    `${formatTime(r.period_start)} – ${formatTime(r.period_end)}`,
                    r.proration === null ? "—" : `${formatMoney(r.proration.charge, r.currency)} − ${formatMoney(r.proration.credit, r.currency)} = ${formatMoney(r.proration.net, r.currency)}`,
                    r.transaction_id ?? "—"
                  ]
                }))}
              />
            )}
          </Panel>
        </>
      )}
    </Page>
  )
}
