/**
 * Licenses: search by key prefix, filters (status, product, user, order, generator, expiry), sort and pages, all
 * kept in the URL; and a new license (write keys).
 */
import { call, names } from "../api.js"
import { formatDate, formatNumber, formatTime } from "../format.js"
import { Link, navigate, useQueryState } from "../router.js"
import { Badge, defined, Disclosure, Field, Filters, Form, type FormValues, Listed, localInputValue, Page, Select, Table, useLoad, useSigned } from "../ui.js"

/** A number from the URL, as the API's query schema takes it (a bad one is refused by the schema, in words). */
export const numberParam = (value: string | undefined): number | undefined => value === undefined || value === "" ? undefined : Number(value)

/** Entitlement codes typed as a list separated by commas or spaces (the server checks each one and sorts them). */
export const codesOf = (text: string | undefined): ReadonlyArray<string> | undefined =>
  text === undefined ? undefined : text.split(/[\s,]+/).filter((code) => code !== "")

/** An ISO time from the URL as the API's time input (epoch milliseconds). */
export const timeParam = (value: string | undefined): number | undefined => value === undefined || value === "" ? undefined : Date.parse(value)

/** The writable license fields of a create or edit form (`nullable`: an empty field clears the setting). */
export const licenseSettings = (values: FormValues, nullable: boolean) => {
  const int = (name: string) => nullable ? values.intOrNull(name) : values.int(name)
  const policyId = int("policy_id")
  // A new license of a policy takes the policy's settings: an unticked box there means "the policy's", not "no".
  const box = (name: string) => !nullable && policyId != null && !values.bool(name) ? undefined : values.bool(name)
  return defined({
    policy_id: policyId,
    entitlements: codesOf(values.text("entitlements")) ?? (nullable ? [] : undefined),
    product_id: int("product_id"),
    order_id: int("order_id"),
    user_id: int("user_id"),
    max_activations: int("max_activations"),
    overage_strategy: values.text("overage_strategy") as (typeof names.overageStrategies)[number] | undefined,
    is_floating: box("is_floating"),
    lease_duration: int("lease_duration"),
    require_heartbeat: box("require_heartbeat"),
    heartbeat_interval: int("heartbeat_interval"),
    valid_for_days: int("valid_for_days"),
    expires_at: nullable ? values.time("expires_at") ?? null : values.time("expires_at"),
    grace_days: int("grace_days")
  })
}

/** The fields of {@link licenseSettings}, filled with `current` values when editing. */
export const LicenseSettingsFields = ({ current }: { readonly current?: Readonly<Record<string, unknown>> }) => {
  const value = (name: string) => {
    const v = current?.[name]
    return v === null || v === undefined ? "" : String(v)
  }
  const time = (name: string) => {
    const v = current?.[name]
    return typeof v === "string" ? localInputValue(v) : ""
  }
  return (
    <div class="fields">
      <Field name="policy_id" label="Policy id" inputMode="numeric" hint="Its settings are defaults under the fields set here" defaultValue={value("policy_id")} />
      <Field
        name="entitlements"
        label="Own entitlements"
        hint="Codes separated by commas; the policy's come on top"
        spellcheck={false}
        defaultValue={Array.isArray(current?.entitlements) ? current.entitlements.join(", ") : ""}
      />
      <Field name="product_id" label="Product id" inputMode="numeric" defaultValue={value("product_id")} />
      <Field name="user_id" label="User id" inputMode="numeric" defaultValue={value("user_id")} />
      <Field name="order_id" label="Order id" inputMode="numeric" defaultValue={value("order_id")} />
      <Field name="max_activations" label="Seats (max activations)" inputMode="numeric" hint="Empty: unlimited" defaultValue={value("max_activations")} />
      <Select name="overage_strategy" label="Overage" options={names.overageStrategies} value={value("overage_strategy") || "deny"} />
      <Field name="valid_for_days" label="Valid for days" inputMode="numeric" hint="From first activation" defaultValue={value("valid_for_days")} />
      <Field name="expires_at" label="Expires at" type="datetime-local" hint="Empty: perpetual" defaultValue={time("expires_at")} />
      <Field name="grace_days" label="Grace days" inputMode="numeric" defaultValue={value("grace_days")} />
      <Field name="lease_duration" label="Lease duration (s)" inputMode="numeric" defaultValue={value("lease_duration")} />
      <Field name="heartbeat_interval" label="Heartbeat interval (s)" inputMode="numeric" defaultValue={value("heartbeat_interval")} />
      <Field name="is_floating" label="Floating (leases)" type="checkbox" defaultChecked={current?.is_floating === true} />
      <Field name="require_heartbeat" label="Require heartbeat" type="checkbox" defaultChecked={current?.require_heartbeat === true} />
    </div>
  )
}

export const Licenses = () => {
  const { api, canWrite } = useSigned()
  const { values } = useQueryState()
  const query = defined({
    search: values.search,
    status: values.status as (typeof names.licenseStatuses)[number] | undefined,
    product_id: numberParam(values.product_id),
    user_id: numberParam(values.user_id),
    order_id: numberParam(values.order_id),
    generator_id: numberParam(values.generator_id),
    expires_before: timeParam(values.expires_before),
    expires_after: timeParam(values.expires_after),
    orderby: values.orderby as (typeof names.licenseSortColumns)[number] | undefined,
    order: values.order as "asc" | "desc" | undefined,
    page: numberParam(values.page),
    per_page: numberParam(values.per_page)
  })
  const list = useLoad((signal) => call(api.licenses.list({ query }), { signal }), [location.search])
  return (
    <Page title="Licenses" busy={list.loading}>
      {canWrite ? (
        <Disclosure summary="New license">
          <Form
            label="New license"
            submitLabel="Create license"
            onSubmit={async (v) => {
              const created = await call(api.licenses.create({
                payload: defined({ license_key: v.text("license_key"), generator_id: v.int("generator_id"), ...licenseSettings(v, false) })
              }))
              navigate(`/licenses/${created.data.license_key}`)
            }}
          >
            <div class="fields">
              <Field name="license_key" label="Key" placeholder="Leave empty to mint one" spellcheck={false} />
              <Field name="generator_id" label="Generator id" inputMode="numeric" hint="Draw from its pool" />
            </div>
            <LicenseSettingsFields />
          </Form>
        </Disclosure>
      ) : null}
      <Filters
        label="Filter licenses"
        names={["search", "status", "product_id", "user_id", "order_id", "generator_id", "expires_after", "expires_before", "orderby", "order"]}
        dates={["expires_after", "expires_before"]}
        submitLabel="Search"
        clear
      >
        <div class="field field-search">
          <label for="license-search">Key starts with</label>
          <input id="license-search" name="search" type="search" defaultValue={values.search ?? ""} spellcheck={false} autoComplete="off" placeholder="ABCD-EF…" />
        </div>
        <Select name="status" label="Status" options={names.licenseStatuses} empty="Any" value={values.status ?? ""} />
        <Field name="product_id" label="Product" inputMode="numeric" defaultValue={values.product_id ?? ""} />
        <Field name="user_id" label="User" inputMode="numeric" defaultValue={values.user_id ?? ""} />
        <Field name="order_id" label="Order" inputMode="numeric" defaultValue={values.order_id ?? ""} />
        <Field name="generator_id" label="Generator" inputMode="numeric" defaultValue={values.generator_id ?? ""} />
        <Field name="expires_after" label="Expires after" type="date" defaultValue={values.expires_after?.slice(0, 10) ?? ""} />
        <Field name="expires_before" label="Expires before" type="date" defaultValue={values.expires_before?.slice(0, 10) ?? ""} />
        <Select name="orderby" label="Sort by" options={names.licenseSortColumns} value={values.orderby ?? "id"} />
        <Select name="order" label="Order" options={[["desc", "Newest first"], ["asc", "Oldest first"]]} value={values.order ?? "desc"} />
      </Filters>
      <Listed list={list}>
        {(answer) => (
          <Table
            caption="Licenses"
            head={["Key", "Status", "Seats", "Product", "User", "Expires", "Created"]}
            empty="No license matches."
            rows={answer.data.licenses.map((l) => ({
              key: l.id,
              cells: [
                <Link href={`/licenses/${l.license_key}`}><code>{l.license_key}</code></Link>,
                <Badge value={l.status} />,
                `${formatNumber(l.activation_count)} / ${l.max_activations === null ? "∞" : formatNumber(l.max_activations)}`,
                l.product_id ?? "—",
                l.user_id ?? "—",
                formatDate(l.expires_at),
                formatTime(l.created_at)
              ]
            }))}
          />
        )}
      </Listed>
    </Page>
  )
}
