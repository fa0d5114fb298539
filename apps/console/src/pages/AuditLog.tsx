/**
 * The audit log (CONTRACT §18): every management write, refused ones included, newest first; filters (actor,
 * action, target, time) and the page kept in the URL, so a filtered view can be shared as a link.
 */
import { call, names } from "../api.js"
import { formatTime } from "../format.js"
import { Link, useQueryState } from "../router.js"
import { Badge, defined, ErrorNote, Loading, Page, Pager, Select, Table, useLoad, useSigned } from "../ui.js"
import { numberParam, timeParam } from "./Licenses.js"

/** Where an entry's target lives in the console, when it has a page. */
const targetHref = (type: string, id: string): string | undefined =>
  type === "license" ? `/licenses/${id}` : type === "machine" ? `/machines/${id}` : type === "generator" ? `/generators/${id}`
  : type === "webhook" ? `/webhooks/${id}` : type === "subscription" ? `/subscriptions/${id}` : undefined

export const AuditLog = () => {
  const { api } = useSigned()
  const { values, set } = useQueryState()
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
      <form
        class="filters"
        key={location.search}
        aria-label="Filter the audit log"
        onSubmit={(e) => {
          e.preventDefault()
          const data = new FormData(e.currentTarget)
          const text = (name: string) => String(data.get(name) ?? "").trim()
          const date = (name: string) => text(name) === "" ? undefined : new Date(text(name)).toISOString()
          set({
            actor: text("actor") || undefined,
            action: text("action") || undefined,
            target_type: text("target_type") || undefined,
            target_id: text("target_id") || undefined,
            from: date("from"),
            to: date("to"),
            page: undefined
          })
        }}
      >
        <Select name="actor" label="Actor" options={names.auditActorTypes} empty="Any" value={actor !== undefined && !/^\d+$/.test(actor) ? actor : ""} />
        <div class="field"><label for="a-action">Action</label><input id="a-action" name="action" defaultValue={values.action ?? ""} placeholder="license.revoke" spellcheck={false} /></div>
        <div class="field"><label for="a-type">Target type</label><input id="a-type" name="target_type" defaultValue={values.target_type ?? ""} placeholder="license" spellcheck={false} /></div>
        <div class="field"><label for="a-id">Target id</label><input id="a-id" name="target_id" defaultValue={values.target_id ?? ""} spellcheck={false} /></div>
        <div class="field"><label for="a-from">From</label><input id="a-from" name="from" type="datetime-local" defaultValue={values.from?.slice(0, 16) ?? ""} /></div>
        <div class="field"><label for="a-to">To</label><input id="a-to" name="to" type="datetime-local" defaultValue={values.to?.slice(0, 16) ?? ""} /></div>
        <div class="form-actions">
          <button type="submit" class="primary">Filter</button>
          <button type="button" onClick={() => set({ actor: undefined, action: undefined, target_type: undefined, target_id: undefined, from: undefined, to: undefined, page: undefined })}>Clear</button>
        </div>
      </form>
      <ErrorNote error={list.error} />
      {list.data === undefined ? (list.loading ? <Loading /> : null) : (
        <>
          <Table
            caption="Audit log"
            head={["When", "Actor", "IP", "Action", "Target", "Status", "Request id"]}
            empty="No entry matches."
            rows={list.data.data.entries.map((e) => {
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
          <Pager meta={list.data.meta} onPage={(page) => set({ page })} />
        </>
      )}
    </Page>
  )
}
