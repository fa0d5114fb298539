/**
 * One license: its settings, where the revocation list has it, its validations over 30 days and its machines
 * (paged, by status; remove frees the seat, revoke bars the device for good). Write keys get every action (renew, suspend, revoke,
 * reinstate, terminate after typing the key, delete) and the edit form.
 */
import { useEffect, useState } from "preact/hooks"
import { call, type License as LicenseData, names } from "../api.js"
import { ValidationsChart } from "../Chart.js"
import { decodeCrl, keyListing } from "../crl.js"
import { formatNumber, formatSeconds, formatTime } from "../format.js"
import { Link, navigate, useQueryState } from "../router.js"
import { Action, Badge, defined, Disclosure, ErrorNote, Facts, Field, Form, Loading, Page, Pager, Panel, Table, useLoad, useSigned } from "../ui.js"
import { LicenseSettingsFields, licenseSettings, numberParam } from "./Licenses.js"
import { Codes } from "./Policies.js"

const terminal = (status: string) => status === "terminated"

/** Where the public revocation list has this key now (it changes with suspend, revoke, reinstate, terminate). */
const CrlListing = ({ license, version }: { readonly license: LicenseData; readonly version: string }) => {
  const { api } = useSigned()
  const [listing, setListing] = useState<{ seq: number; on: string | undefined } | undefined>(undefined)
  const [failed, setFailed] = useState(false)
  useEffect(() => {
    let live = true
    call(api.client.crl({ headers: {} }))
      .then(async (answer) => {
        if (answer === undefined) throw new Error("no list")
        const payload = decodeCrl(answer.data.crl)
        const on = await keyListing(payload, license.license_key)
        if (live) setListing({ seq: payload.seq, on })
      })
      .catch(() => live && setFailed(true))
    return () => {
      live = false
    }
  }, [license.license_key, version])
  if (failed) return <span>unavailable</span>
  if (listing === undefined) return <span>…</span>
  return (
    <span data-crl={listing.on ?? "unknown"}>
      {listing.on === undefined ? "cannot be checked here (no Web Crypto)" : listing.on === "not listed" ? "not listed" : `listed as ${listing.on}`}
      {` (list #${formatNumber(listing.seq)})`}
    </span>
  )
}

export const LicenseDetail = ({ params }: { readonly params: Record<string, string> }) => {
  const { api, canWrite } = useSigned()
  const key = params.key!
  const license = useLoad((signal) => call(api.licenses.get({ params: { key } }), { signal }), [key])
  const series = useLoad((signal) => {
    const to = new Date()
    return call(api.analytics.validations({
      query: { license_key: key, interval: "day", from: to.getTime() - 30 * 86_400_000, to: to.getTime() }
    }), { signal })
  }, [key])
  const l = license.data?.data
  if (l === undefined) {
    return (
      <Page title={<code>{key}</code>} busy={license.loading}>
        <ErrorNote error={license.error} />
        {license.loading ? <Loading /> : null}
      </Page>
    )
  }
  const reload = () => license.reload()
  const path = { params: { key: l.license_key } }
  const status = l.status
  return (
    <Page
      title={<><code>{l.license_key}</code> <Badge value={status} /></>}
      busy={license.loading}
      actions={canWrite ? (
        <>
          {terminal(status) ? null : (
            <>
              {status === "suspended" || status === "revoked" ? <Action label="Reinstate" run={() => call(api.licenses.reinstate({ ...path, payload: {} }))} onDone={reload} /> : null}
              {status === "suspended" || status === "revoked" ? null : (
                <Action
                  label="Suspend"
                  run={() => call(api.licenses.suspend({ ...path, payload: {} }))}
                  onDone={reload}
                  confirm={{ title: "Suspend this license?", body: <p>Validations are refused until it is reinstated. Its machines are kept.</p>, confirmLabel: "Suspend" }}
                />
              )}
              {status === "revoked" ? null : (
                <Action
                  label="Revoke"
                  danger
                  run={() => call(api.licenses.revoke({ ...path, payload: {} }))}
                  onDone={reload}
                  confirm={{ title: "Revoke this license?", body: <p>It goes on the revocation list; it can be reinstated later.</p>, confirmLabel: "Revoke" }}
                />
              )}
              <Action
                label="Terminate"
                danger
                run={() => call(api.licenses.terminate({ ...path, payload: { confirm: true } }))}
                onDone={reload}
                confirm={{
                  title: "Terminate this license for good?",
                  body: <p>Terminating cannot be undone: every machine is deactivated and the key never validates again.</p>,
                  confirmLabel: "Terminate",
                  typed: l.license_key
                }}
              />
            </>
          )}
          <Action
            label="Delete"
            danger
            run={() => call(api.licenses.delete({ ...path, payload: {} }))}
            onDone={() => navigate("/licenses")}
            confirm={{ title: "Delete this license?", body: <p>The license and its machines are removed from the store.</p>, confirmLabel: "Delete", typed: l.license_key }}
          />
        </>
      ) : undefined}
    >
      <div class="columns">
        <Panel title="License">
          <Facts
            items={[
              ["Status", <Badge value={status} />],
              ["Revocation list", <CrlListing license={l} version={`${l.status}:${l.updated_at}`} />],
              ["Seats", `${formatNumber(l.activation_count)} of ${l.max_activations === null ? "unlimited" : formatNumber(l.max_activations)} (${l.overage_strategy.replace(/_/g, " ")})`],
              ["Floating", l.is_floating ? `yes, leases of ${formatSeconds(l.lease_duration)}` : "no"],
              ["Heartbeat", l.require_heartbeat ? `every ${formatSeconds(l.heartbeat_interval)}` : "not required"],
              ["Policy", l.policy_id === null ? null : <Link href={`/policies/${l.policy_id}`}>policy #{l.policy_id}</Link>],
              ["Entitlements", <Codes codes={l.effective_entitlements} />],
              ["Own entitlements", <Codes codes={l.entitlements} />],
              ["Product", l.product_id],
              ["User", l.user_id],
              ["Order", l.order_id],
              ["Expires", l.expires_at === null ? "never" : formatTime(l.expires_at)],
              ["Grace", `${formatNumber(l.grace_days)} days`],
              ["Valid for", l.valid_for_days === null ? null : `${formatNumber(l.valid_for_days)} days from activation`],
              ["Activated", formatTime(l.activated_at)],
              ["Source", l.generator_id === null ? l.source : <>{l.source} (<Link href={`/generators/${l.generator_id}`}>generator {l.generator_id}</Link>)</>],
              ["Subscription", l.subscription_id === null ? null : <Link href={`/subscriptions/${l.subscription_id}`}>#{l.subscription_id}</Link>],
              ["Created", formatTime(l.created_at)],
              ["Updated", formatTime(l.updated_at)]
            ]}
          />
          {Object.keys(l.meta).length === 0 ? null : <pre class="meta">{JSON.stringify(l.meta, null, 2)}</pre>}
        </Panel>
        <Panel title="Validations, 30 days">
          <ErrorNote error={series.error} />
          {series.data === undefined ? <Loading /> : <ValidationsChart series={series.data.data} label="This license's validations by day" />}
        </Panel>
      </div>

      {canWrite && !terminal(status) ? (
        <div class="columns">
          <Disclosure summary="Renew">
            <Form
              label="Renew"
              submitLabel="Renew"
              onSubmit={async (v) => {
                await call(api.licenses.renew({ ...path, payload: defined({ days: v.int("days"), expires_at: v.time("expires_at") }) }))
                reload()
              }}
            >
              <p class="hint">Days extend from the later of now and the current expiry; a date sets it; neither renews from now by the license's valid days.</p>
              <div class="fields">
                <Field name="days" label="Days" inputMode="numeric" />
                <Field name="expires_at" label="Or expires at" type="datetime-local" />
              </div>
            </Form>
          </Disclosure>
          <Disclosure summary="Edit settings">
            <Form
              key={l.updated_at}
              label="Edit settings"
              submitLabel="Save"
              onSubmit={async (v) => {
                await call(api.licenses.update({ ...path, payload: licenseSettings(v, true) }))
                reload()
              }}
            >
              <LicenseSettingsFields current={l} />
            </Form>
          </Disclosure>
        </div>
      ) : null}

      <Machines licenseKey={l.license_key} version={license.data} onChange={reload} />
    </Page>
  )
}

/**
 * The license's machines, a page at a time, filtered by status (both in the URL: `machine_page`,
 * `machine_status`); read again whenever the license is (`version`: its last answer).
 */
const Machines = (props: { readonly licenseKey: string; readonly version: unknown; readonly onChange: () => void }) => {
  const { api, canWrite } = useSigned()
  const { values, set } = useQueryState()
  const query = defined({
    status: values.machine_status as (typeof names.machineStatuses)[number] | undefined,
    page: numberParam(values.machine_page)
  })
  const machines = useLoad(
    (signal) => call(api.machines.listForLicense({ params: { key: props.licenseKey }, query }), { signal }),
    [props.licenseKey, props.version, values.machine_status, values.machine_page]
  )
  return (
    <Panel
      title={`Machines (${machines.data === undefined ? "…" : formatNumber(machines.data.meta.total)})`}
      actions={
        <div class="toolbar" role="group" aria-label="Machine status">
          {[undefined, ...names.machineStatuses].map((status) => (
            <button type="button" key={status ?? "all"} aria-pressed={values.machine_status === status} onClick={() => set({ machine_status: status, machine_page: undefined })}>
              {status ?? "all"}
            </button>
          ))}
        </div>
      }
    >
      <ErrorNote error={machines.error} />
      {machines.data === undefined ? (machines.loading ? <Loading /> : null) : (
        <>
          <Table
            caption="Machines"
            head={canWrite ? ["Id", "Fingerprint", "Name", "Platform", "Version", "IP", "Status", "Last seen", "Actions"] : ["Id", "Fingerprint", "Name", "Platform", "Version", "IP", "Status", "Last seen"]}
            empty={values.machine_status === undefined ? "No machine was activated on this license." : `No ${values.machine_status} machine.`}
            rows={machines.data.data.machines.map((m) => ({
              key: m.id,
              cells: [
                <Link href={`/machines/${m.id}?license=${props.licenseKey}`}>#{m.id}</Link>,
                <code class="fingerprint">{m.fingerprint}</code>,
                m.name ?? m.hostname ?? "—",
                m.platform ?? "—",
                m.app_version ?? "—",
                m.ip_address ?? "—",
                <Badge value={m.status} />,
                formatTime(m.last_heartbeat_at ?? m.activated_at),
                ...(canWrite ? [<MachineActions machine={m} onDone={props.onChange} />] : [])
              ]
            }))}
          />
          <Pager meta={machines.data.meta} onPage={(page) => set({ machine_page: page })} />
        </>
      )}
    </Panel>
  )
}

/** Remove (deactivate, the seat is freed) and revoke (barred for good) for one machine. */
export const MachineActions = ({ machine, onDone }: { readonly machine: { readonly id: number; readonly status: string; readonly fingerprint: string }; readonly onDone: () => void }) => {
  const { api } = useSigned()
  const params = { params: { id: machine.id } }
  return (
    <span class="row-actions">
      {machine.status === "active" ? (
        <Action
          label="Remove"
          run={() => call(api.machines.deactivate({ ...params, payload: {} }))}
          onDone={onDone}
          confirm={{ title: "Remove this machine?", body: <p>Its seat is freed; the device may activate again.</p>, confirmLabel: "Remove" }}
        />
      ) : null}
      {machine.status === "revoked" ? null : (
        <Action
          label="Revoke"
          danger
          run={() => call(api.machines.revoke({ ...params, payload: {} }))}
          onDone={onDone}
          confirm={{
            title: "Revoke this machine?",
            body: <p>Its seat is freed and the fingerprint <code>{machine.fingerprint}</code> can never activate on this license again.</p>,
            confirmLabel: "Revoke machine"
          }}
        />
      )}
    </span>
  )
}
