/**
 * Webhooks: the list and registering one (its signing secret is shown once); one webhook with ping, enable or
 * disable, edit, delete, and its delivery log (paged in the URL) with redeliver.
 */
import { useState } from "preact/hooks"
import { call, names, type Webhook } from "../api.js"
import { formatNumber, formatTime } from "../format.js"
import { Link, navigate, useQueryState } from "../router.js"
import { Action, Badge, defined, Disclosure, ErrorNote, Facts, Field, Form, type FormValues, Listed, Loading, Page, Pager, Panel, SecretOnce, Table, useLoad, useSigned } from "../ui.js"
import { numberParam } from "./Licenses.js"

const eventNames = names.webhookEventTypes.filter((name) => name !== "webhook.ping")

/** The event check boxes: all (`*`) or some. */
const EventsField = ({ current }: { readonly current?: ReadonlyArray<string> }) => {
  const [all, setAll] = useState(current === undefined || current.includes("*"))
  return (
    <fieldset class="events">
      <legend>Events</legend>
      <label class="check">
        <input type="checkbox" name="events" value="*" checked={all} onChange={(e) => setAll(e.currentTarget.checked)} /> Every event
      </label>
      {all ? null : (
        <div class="event-list">
          {eventNames.map((name) => (
            <label class="check" key={name}>
              <input type="checkbox" name="events" value={name} defaultChecked={current?.includes(name) === true} /> <code>{name}</code>
            </label>
          ))}
        </div>
      )}
    </fieldset>
  )
}

const events = (v: FormValues) => {
  const chosen = v.all("events")
  return chosen.includes("*") ? ["*"] : chosen
}

export const Webhooks = () => {
  const { api, canWrite } = useSigned()
  const { values } = useQueryState()
  const list = useLoad((signal) => call(api.webhooks.list({ query: defined({ page: numberParam(values.page) }) }), { signal }), [location.search])
  const [created, setCreated] = useState<{ id: number; secret: string } | undefined>(undefined)
  return (
    <Page title="Webhooks" busy={list.loading}>
      {created === undefined ? null : (
        <SecretOnce
          title="Webhook registered"
          values={[["Signing secret", created.secret]]}
          onDismiss={() => {
            setCreated(undefined)
            navigate(`/webhooks/${created.id}`)
          }}
        />
      )}
      {canWrite ? (
        <Disclosure summary="Register a webhook">
          <Form
            label="Register a webhook"
            submitLabel="Register"
            onSubmit={async (v, form) => {
              const answer = await call(api.webhooks.create({ payload: { url: v.text("url") ?? "", events: events(v), ...defined({ name: v.text("name") }) } }))
              form.reset()
              setCreated({ id: answer.data.id, secret: answer.data.secret })
              list.reload()
            }}
          >
            <div class="fields">
              <Field name="name" label="Name" />
              <Field name="url" label="URL" type="url" placeholder="https://example.com/hooks/licensing" required />
            </div>
            <EventsField />
          </Form>
        </Disclosure>
      ) : null}
      <Listed list={list}>
        {(answer) => (
          <Table
            caption="Webhooks"
            head={["Name", "URL", "Events", "Status", "Created"]}
            empty="No webhook registered."
            rows={answer.data.webhooks.map((w) => ({
              key: w.id,
              cells: [
                <Link href={`/webhooks/${w.id}`}>{w.name || `#${w.id}`}</Link>,
                <code class="url">{w.url}</code>,
                w.events.includes("*") ? "every event" : formatNumber(w.events.length),
                <Badge value={w.status} />,
                formatTime(w.created_at)
              ]
            }))}
          />
        )}
      </Listed>
    </Page>
  )
}

const WebhookActions = ({ w, onDone }: { readonly w: Webhook; readonly onDone: () => void }) => {
  const { api } = useSigned()
  const [ping, setPing] = useState<string | undefined>(undefined)
  const id = { params: { id: w.id } }
  return (
    <>
      <Action
        label="Ping"
        run={() => call(api.webhooks.ping({ ...id, payload: {} }))}
        onDone={(answer) => {
          const p = answer.data
          setPing(p.delivered
            ? `Delivered: HTTP ${p.response_status} in ${formatNumber(p.duration_ms)} ms`
            : `Not delivered${p.response_status === null ? "" : `: HTTP ${p.response_status}`}${p.error === null ? "" : ` (${p.error})`}`)
        }}
      />
      {ping === undefined ? null : <span class="ping" role="status">{ping}</span>}
      <Action
        label={w.status === "active" ? "Disable" : "Enable"}
        run={() => call(api.webhooks.update({ ...id, payload: { status: w.status === "active" ? "disabled" : "active" } }))}
        onDone={onDone}
      />
      <Action
        label="Delete"
        danger
        run={() => call(api.webhooks.delete({ ...id, payload: {} }))}
        onDone={() => navigate("/webhooks")}
        confirm={{ title: "Delete this webhook?", body: <p>It receives nothing more, and its delivery log goes with it.</p>, confirmLabel: "Delete" }}
      />
    </>
  )
}

export const WebhookDetail = ({ params }: { readonly params: Record<string, string> }) => {
  const { api, canWrite } = useSigned()
  const { values, set } = useQueryState()
  const id = Number(params.id)
  const webhook = useLoad((signal) => call(api.webhooks.get({ params: { id } }), { signal }), [id])
  const deliveries = useLoad(
    (signal) => call(api.webhooks.deliveries({ params: { id }, query: defined({ page: numberParam(values.page) }) }), { signal }),
    [id, location.search]
  )
  const w = webhook.data?.data
  return (
    <Page
      title={<>{w?.name || `Webhook #${params.id}`} {w === undefined ? null : <Badge value={w.status} />}</>}
      busy={webhook.loading}
      actions={canWrite && w !== undefined ? <WebhookActions w={w} onDone={webhook.reload} /> : undefined}
    >
      <ErrorNote error={webhook.error} />
      {w === undefined ? (webhook.loading ? <Loading /> : null) : (
        <>
          <Panel title="Webhook">
            <Facts items={[["URL", <code class="url">{w.url}</code>], ["Events", w.events.join(", ")], ["Status", <Badge value={w.status} />], ["Created", formatTime(w.created_at)]]} />
          </Panel>
          {canWrite ? (
            <Disclosure summary="Edit">
              <Form
                label="Edit webhook"
                submitLabel="Save"
                onSubmit={async (v) => {
                  await call(api.webhooks.update({ params: { id }, payload: defined({ name: v.text("name") ?? "", url: v.text("url"), events: events(v) }) }))
                  webhook.reload()
                }}
              >
                <div class="fields">
                  <Field name="name" label="Name" defaultValue={w.name} />
                  <Field name="url" label="URL" type="url" defaultValue={w.url} />
                </div>
                <EventsField current={w.events} />
              </Form>
            </Disclosure>
          ) : null}
        </>
      )}
      <Panel title="Deliveries" actions={<button type="button" onClick={deliveries.reload}>Refresh</button>}>
        <ErrorNote error={deliveries.error} />
        {deliveries.data === undefined ? (deliveries.loading ? <Loading /> : null) : (
          <>
            <Table
              caption="Deliveries, newest first"
              head={canWrite ? ["Event", "Status", "Attempts", "Response", "Last attempt", "Next attempt", ""] : ["Event", "Status", "Attempts", "Response", "Last attempt", "Next attempt"]}
              empty="Nothing was delivered yet."
              rows={deliveries.data.data.deliveries.map((d) => ({
                key: d.id,
                cells: [
                  <code>{d.type}</code>,
                  <Badge value={d.status} />,
                  formatNumber(d.attempts),
                  d.response_status === null ? (d.response_excerpt ?? "—") : <span title={d.response_excerpt ?? ""}>HTTP {d.response_status}</span>,
                  formatTime(d.last_attempt_at),
                  formatTime(d.next_attempt_at),
                  ...(canWrite
                    ? [<Action label="Redeliver" run={() => call(api.webhooks.redeliver({ params: { id, delivery_id: d.id }, payload: {} }))} onDone={deliveries.reload} />]
                    : [])
                ]
              }))}
            />
            <Pager meta={deliveries.data.meta} onPage={(page) => set({ page })} />
          </>
        )}
      </Panel>
    </Page>
  )
}
