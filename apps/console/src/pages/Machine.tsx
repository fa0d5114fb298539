/** One machine: where it runs, its seat's times, its hardware components; remove or revoke it (write keys). */
import { call } from "../api.js"
import { formatTime } from "../format.js"
import { Link, useLocation } from "../router.js"
import { Badge, ErrorNote, Facts, Loading, Page, Panel, Table, useLoad, useSigned } from "../ui.js"
import { MachineActions } from "./License.js"

export const MachineDetail = ({ params }: { readonly params: Record<string, string> }) => {
  const { api, canWrite } = useSigned()
  // The license's key, when the machine was opened from its license (a machine names its license by id only).
  const licenseKey = useLocation().query.get("license")
  const id = Number(params.id)
  const machine = useLoad((signal) => call(api.machines.get({ params: { id } }), { signal }), [id])
  const m = machine.data?.data
  return (
    <Page
      title={<>Machine #{params.id} {m === undefined ? null : <Badge value={m.status} />}</>}
      busy={machine.loading}
      actions={canWrite && m !== undefined ? <MachineActions machine={m} onDone={machine.reload} /> : undefined}
    >
      <ErrorNote error={machine.error} />
      {m === undefined ? (machine.loading ? <Loading /> : null) : (
        <>
          <Panel title="Machine">
            <Facts
              items={[
                ["License", licenseKey === null ? `#${m.license_id}` : <Link href={`/licenses/${licenseKey}`}><code>{licenseKey}</code></Link>],
                ["Fingerprint", <code class="fingerprint">{m.fingerprint}</code>],
                ["Name", m.name],
                ["Hostname", m.hostname],
                ["Platform", m.platform],
                ["App version", m.app_version],
                ["IP address", m.ip_address],
                ["Activated", formatTime(m.activated_at)],
                ["Last heartbeat", formatTime(m.last_heartbeat_at)],
                ["Lease expires", formatTime(m.lease_expires_at)],
                ["Deactivated", m.deactivated_at === null ? null : `${formatTime(m.deactivated_at)} (${m.deactivation_reason ?? "—"})`]
              ]}
            />
            {Object.keys(m.meta).length === 0 ? null : <pre class="meta">{JSON.stringify(m.meta, null, 2)}</pre>}
          </Panel>
          <Panel title="Components">
            <Table
              caption="Hardware components"
              head={["Kind", "Fingerprint", "Name"]}
              empty="The client reported no component."
              rows={m.components.map((c) => ({ key: c.id, cells: [c.kind, <code class="fingerprint">{c.fingerprint}</code>, c.name ?? "—"] }))}
            />
          </Panel>
        </>
      )}
    </Page>
  )
}
