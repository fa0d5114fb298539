/**
 * The audit log (CONTRACT §18): every management write, refused ones included, newest first; filters (actor,
 * action, target, time) and the page kept in the URL, so a filtered view can be shared as a link.
 */
import { call, names } from "../api.js"
import { formatTime } from "../format.js"
import { Link, useQueryState } from "../router.js"
import { Badge, defined, Field, Filters, Listed, Page, Select, Table, useLoad, useSigned } from "../ui.js"
import { numberParam, timeParam } from "./Licenses.js"

/** Where an entry's target lives in the console, when it has a page. */
const targetHref = (type: string, id: string): string | undefined =>
  type === "license" ? `/licenses/${id}` : type === "machine" ? `/machines/${id}` : type === "generator" ? `/generators/${id}`
  : type === "webhook" ? `/webhooks/${id}` : type === "subscription" ? `/subscriptions/${id}` : undefined

export const AuditLog = () => {
  const { api } = useSigned()
  const { values } = useQueryState()
  const actor = values.actor
  const query = defined({
    actor: actor === undefined || actor === "" ? undefined : /^\d+$/.test(actor) ? Number(actor) : actor as (typeof names.auditActorTypes)[number],
    action: values.action || undefined,
    target_type: values.target_type || undefined,
    target_id: values.target_id || undefined,
    from: timeParam(values.from),
    to: timeParam(values.to),
    page: numberParam(values.page),
    per_page: numberParam(values.per_page)
  })
  const list = useLoad((signal) => call(api["audit-log"].list({ query }), { signal }), [location.search])
  return (
    <Page title="Audit log" busy={list.loading}>
      <Filters label="Filter the audit log" names={["actor", "action", "target_type", "target_id", "from", "to"]} dates={["from", "to"]} clear>
        <Select name="actor" label="Actor" options={names.auditActorTypes} empty="Any" value={actor !== undefined && !/^\d+$/.test(actor) ? actor : ""} />
        <Field name="action" label="Action" defaultValue={values.action ?? ""} placeholder="license.revoke" spellcheck={false} />
        <Field name="target_type" label="Target type" defaultValue={values.target_type ?? ""} placeholder="license" spellcheck={false} />
        <Field name="target_id" label="Target id" defaultValue={values.target_id ?? ""} spellcheck={false} />
        <Field name="from" label="From" type="datetime-local" defaultValue={values.from?.slice(0, 16) ?? ""} />
        <Field name="to" label="To" type="datetime-local" defaultValue={values.to?.slice(0, 16) ?? ""} />
      </Filters>
      <Listed list={list}>
        {(answer) => (
          <Table
            caption="Audit log"
            head={["When", "Actor", "IP", "Action", "Target", "Status", "Request id"]}
            empty="No entry matches."
            rows={answer.data.entries.map((e) => {
              const href = e.target.id === null ? undefined : targetHref(e.target.type, e.target.id)
              const target = e.target.id === null ? e.target.type : `${e.target.type} ${e.target.id}`
              return {
                key: e.id,
                cells: [
                  formatTime(e.at),
                  e.actor.type === "api_key" ? `key ${e.actor.api_key_id ?? ""} ${e.actor.truncated_key ?? ""}` : e.actor.type,
                  e.ip ?? "—",
                  <code>{e.action}</code>,
                  href === undefined ? target : <Link href={href}>{target}</Link>,
                  <Badge value={String(e.status)} />,
                  e.request_id === null ? "—" : <code>{e.request_id}</code>
                ]
              }
            })}
          />
        )}
      </Listed>
    </Page>
  )
}
