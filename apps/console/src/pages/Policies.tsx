/**
 * Policies, the plans licenses are made from (CONTRACT §15): the list and a new policy; one policy's settings and
 * entitlement codes, edit (codes are live on its licenses at once), apply (copies its settings into every license
 * of it) and delete (refused while licenses refer to it).
 */
import { useState } from "preact/hooks"
import { call, names, type Policy } from "../api.js"
import { formatNumber, formatSeconds, formatTime } from "../format.js"
import { Link, navigate, useQueryState } from "../router.js"
import { Action, defined, Disclosure, ErrorNote, Facts, Field, Form, type FormValues, Listed, Loading, Page, Panel, Select, Table, useLoad, useSigned } from "../ui.js"
import { codesOf, numberParam } from "./Licenses.js"

const policyFields = (v: FormValues, nullable: boolean) => {
  const int = (name: string) => nullable ? v.intOrNull(name) : v.int(name)
  return defined({
    product_id: int("product_id"),
    entitlements: codesOf(v.text("entitlements")) ?? (nullable ? [] : undefined),
    max_activations: int("max_activations"),
    overage_strategy: v.text("overage_strategy") as (typeof names.overageStrategies)[number] | undefined,
    is_floating: v.bool("is_floating"),
    lease_duration: v.int("lease_duration"),
    require_heartbeat: v.bool("require_heartbeat"),
    heartbeat_interval: v.int("heartbeat_interval"),
    valid_for_days: int("valid_for_days"),
    grace_days: v.int("grace_days")
  })
}

const PolicyFields = ({ current }: { readonly current?: Policy }) => {
  const value = (v: string | number | null | undefined) => v === null || v === undefined ? "" : String(v)
  return (
    <div class="fields">
      <Field name="name" label="Name" required defaultValue={current?.name ?? ""} />
      <Field name="entitlements" label="Entitlements" hint="Codes separated by commas, e.g. export, sync" spellcheck={false} defaultValue={current?.entitlements.join(", ") ?? ""} />
      <Field name="product_id" label="Product id" inputMode="numeric" defaultValue={value(current?.product_id)} />
      <Field name="max_activations" label="Seats" inputMode="numeric" hint="Empty: unlimited" defaultValue={value(current?.max_activations)} />
      <Select name="overage_strategy" label="Overage" options={names.overageStrategies} value={current?.overage_strategy ?? "deny"} />
      <Field name="is_floating" label="Floating" type="checkbox" defaultChecked={current?.is_floating === true} />
      <Field name="lease_duration" label="Lease (seconds)" inputMode="numeric" defaultValue={value(current?.lease_duration ?? 600)} />
      <Field name="require_heartbeat" label="Heartbeat required" type="checkbox" defaultChecked={current?.require_heartbeat === true} />
      <Field name="heartbeat_interval" label="Heartbeat every (seconds)" inputMode="numeric" defaultValue={value(current?.heartbeat_interval ?? 600)} />
      <Field name="valid_for_days" label="Valid days" inputMode="numeric" defaultValue={value(current?.valid_for_days)} />
      <Field name="grace_days" label="Grace days" inputMode="numeric" defaultValue={value(current?.grace_days ?? 0)} />
    </div>
  )
}

/** Entitlement codes as a list of small code chips. */
export const Codes = ({ codes }: { readonly codes: ReadonlyArray<string> }) =>
  codes.length === 0 ? <span>none</span> : <span class="codes">{codes.map((code) => <code key={code}>{code}</code>)}</span>

export const Policies = () => {
  const { api, canWrite } = useSigned()
  const { values } = useQueryState()
  const query = defined({ page: numberParam(values.page), per_page: numberParam(values.per_page) })
  const list = useLoad((signal) => call(api.policies.list({ query }), { signal }), [location.search])
  return (
    <Page title="Policies" busy={list.loading}>
      {canWrite ? (
        <Disclosure summary="New policy">
          <Form
            label="New policy"
            submitLabel="Create policy"
            onSubmit={async (v) => {
              const created = await call(api.policies.create({ payload: { name: v.text("name") ?? "", ...policyFields(v, false) } }))
              navigate(`/policies/${created.data.id}`)
            }}
          >
            <PolicyFields />
          </Form>
        </Disclosure>
      ) : null}
      <Listed list={list}>
        {(answer) => (
          <Table
            caption="Policies"
            head={["Name", "Entitlements", "Product", "Seats", "Licenses", "Updated"]}
            empty="No policy yet."
            rows={answer.data.policies.map((p) => ({
              key: p.id,
              cells: [
                <Link href={`/policies/${p.id}`}>{p.name}</Link>,
                <Codes codes={p.entitlements} />,
                p.product_id ?? "—",
                p.max_activations === null ? "unlimited" : formatNumber(p.max_activations),
                formatNumber(p.license_count),
                formatTime(p.updated_at)
              ]
            }))}
          />
        )}
      </Listed>
    </Page>
  )
}

export const PolicyDetail = ({ params }: { readonly params: Record<string, string> }) => {
  const { api, canWrite } = useSigned()
  const id = Number(params.id)
  const policy = useLoad((signal) => call(api.policies.get({ params: { id } }), { signal }), [id])
  const p = policy.data?.data
  const [applied, setApplied] = useState<number | undefined>(undefined)
  return (
    <Page
      title={p?.name ?? `Policy #${params.id}`}
      busy={policy.loading}
      actions={canWrite && p !== undefined ? (
        <>
          <Action
            label="Apply to its licenses"
            run={() => call(api.policies.apply({ params: { id }, payload: {} }))}
            onDone={(answer) => {
              setApplied(answer.data.updated)
              policy.reload()
            }}
            confirm={{
              title: "Apply this policy?",
              body: <p>Its settings are copied into its {formatNumber(p.license_count)} licenses, replacing their own.</p>,
              confirmLabel: "Apply"
            }}
          />
          <Action
            label="Delete"
            danger
            run={() => call(api.policies.delete({ params: { id }, payload: {} }))}
            onDone={() => navigate("/policies")}
            confirm={{ title: "Delete this policy?", body: <p>Refused while licenses refer to it.</p>, confirmLabel: "Delete" }}
          />
        </>
      ) : undefined}
    >
      <ErrorNote error={policy.error} />
      {applied === undefined ? null : <p role="status">Applied: {formatNumber(applied)} licenses updated.</p>}
      {p === undefined ? (policy.loading ? <Loading /> : null) : (
        <>
          <Panel title="Policy">
            <Facts
              items={[
                ["Entitlements", <Codes codes={p.entitlements} />],
                ["Licenses", formatNumber(p.license_count)],
                ["Product", p.product_id],
                ["Seats", `${p.max_activations === null ? "unlimited" : formatNumber(p.max_activations)} (${p.overage_strategy.replace(/_/g, " ")})`],
                ["Floating", p.is_floating ? `yes, leases of ${formatSeconds(p.lease_duration)}` : "no"],
                ["Heartbeat", p.require_heartbeat ? `every ${formatSeconds(p.heartbeat_interval)}` : "not required"],
                ["Valid for", p.valid_for_days === null ? null : `${formatNumber(p.valid_for_days)} days from activation`],
                ["Grace", `${formatNumber(p.grace_days)} days`],
                ["Created", formatTime(p.created_at)],
                ["Updated", formatTime(p.updated_at)]
              ]}
            />
          </Panel>
          {canWrite ? (
            <Disclosure summary="Edit policy">
              <Form
                key={p.updated_at}
                label="Edit policy"
                submitLabel="Save"
                onSubmit={async (v) => {
                  await call(api.policies.update({ params: { id }, payload: defined({ name: v.text("name"), ...policyFields(v, true) }) }))
                  policy.reload()
                }}
              >
                <PolicyFields current={p} />
              </Form>
            </Disclosure>
          ) : null}
        </>
      )}
    </Page>
  )
}
