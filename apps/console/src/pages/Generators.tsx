/**
 * Key generators and their pools: the list and a new generator; one generator's settings, edit, delete, and
 * generating N keys into its pool (in batches, with a progress bar: each batch is all or nothing on the server).
 */
import { useState } from "preact/hooks"
import { call, ConsoleError, type Generator, names } from "../api.js"
import { formatNumber, formatTime } from "../format.js"
import { Link, navigate, queryString, useQueryState } from "../router.js"
import { Action, defined, Disclosure, ErrorNote, Facts, Field, Form, type FormValues, Listed, Loading, Page, Panel, Select, Table, useLoad, useSigned } from "../ui.js"
import { numberParam } from "./Licenses.js"

/** The most keys one generate call makes (the API's limit is 10,000; smaller batches show progress). */
const batchSize = 500

const generatorFields = (v: FormValues, nullable: boolean) => {
  const int = (name: string) => nullable ? v.intOrNull(name) : v.int(name)
  const text = (name: string) => nullable ? v.textOrNull(name) : v.text(name)
  return defined({
    charset: text("charset"),
    chunk_length: int("chunk_length"),
    prefix: text("prefix"),
    product_id: int("product_id"),
    default_max_activations: int("default_max_activations"),
    default_valid_days: int("default_valid_days"),
    default_overage_strategy: text("default_overage_strategy") as (typeof names.overageStrategies)[number] | null | undefined,
    default_is_floating: v.bool("default_is_floating")
  })
}

const GeneratorFields = ({ current }: { readonly current?: Generator }) => {
  const value = (v: string | number | null | undefined) => v === null || v === undefined ? "" : String(v)
  return (
    <div class="fields">
      <Field name="name" label="Name" required defaultValue={current?.name ?? ""} />
      <Field name="prefix" label="Prefix" hint="0–8 of A–Z, 0–9" spellcheck={false} defaultValue={value(current?.prefix)} />
      <Field name="chunk_length" label="Characters per group" inputMode="numeric" hint="2–16 (default 4)" defaultValue={value(current?.chunk_length)} />
      <Field name="charset" label="Alphabet" hint="Default: no look-alikes" spellcheck={false} defaultValue={value(current?.charset)} />
      <Field name="product_id" label="Product id" inputMode="numeric" defaultValue={value(current?.product_id)} />
      <Field name="default_max_activations" label="Default seats" inputMode="numeric" defaultValue={value(current?.default_max_activations)} />
      <Field name="default_valid_days" label="Default valid days" inputMode="numeric" defaultValue={value(current?.default_valid_days)} />
      <Select name="default_overage_strategy" label="Default overage" options={names.overageStrategies} empty="—" value={value(current?.default_overage_strategy)} />
      <Field name="default_is_floating" label="Floating by default" type="checkbox" defaultChecked={current?.default_is_floating === true} />
    </div>
  )
}

export const Generators = () => {
  const { api, canWrite } = useSigned()
  const { values } = useQueryState()
  const query = defined({ page: numberParam(values.page), per_page: numberParam(values.per_page) })
  const list = useLoad((signal) => call(api.generators.list({ query }), { signal }), [location.search])
  return (
    <Page title="Generators and pools" busy={list.loading}>
      {canWrite ? (
        <Disclosure summary="New generator">
          <Form
            label="New generator"
            submitLabel="Create generator"
            onSubmit={async (v) => {
              const created = await call(api.generators.create({ payload: { name: v.text("name") ?? "", ...generatorFields(v, false) } }))
              navigate(`/generators/${created.data.id}`)
            }}
          >
            <GeneratorFields />
          </Form>
        </Disclosure>
      ) : null}
      <Listed list={list}>
        {(answer) => (
          <Table
            caption="Generators"
            head={["Name", "Key shape", "Product", "Pool", "Created"]}
            empty="No generator yet."
            rows={answer.data.generators.map((g) => ({
              key: g.id,
              cells: [
                <Link href={`/generators/${g.id}`}>{g.name}</Link>,
                <code>{g.prefix}{"X".repeat(g.chunk_length)}-{"X".repeat(g.chunk_length)}-…</code>,
                g.product_id ?? "—",
                formatNumber(g.pool_size),
                formatTime(g.created_at)
              ]
            }))}
          />
        )}
      </Listed>
    </Page>
  )
}

/** Generates `count` keys in batches, reporting the keys made so far. */
const GenerateForm = ({ generator, onDone }: { readonly generator: Generator; readonly onDone: () => void }) => {
  const { api } = useSigned()
  const [progress, setProgress] = useState<{ made: number; count: number } | undefined>(undefined)
  return (
    <Form
      label="Generate keys"
      submitLabel="Generate"
      busyLabel="Generating…"
      onSubmit={async (v) => {
        const count = v.int("count")
        if (count === undefined || count < 1 || count > 100_000) {
          throw new ConsoleError("invalid_input", 400, "Invalid input: count.", { count: "must be a whole number from 1 to 100000" })
        }
        setProgress({ made: 0, count })
        let made = 0
        try {
          while (made < count) {
            const n = Math.min(batchSize, count - made)
            await call(api.generators.generate({ params: { id: generator.id }, payload: { count: n } }))
            made += n
            setProgress({ made, count })
          }
        } catch (error) {
          if (error instanceof ConsoleError && made > 0) {
            throw new ConsoleError(error.code, error.status, `${error.message} ${formatNumber(made)} of ${formatNumber(count)} keys were made and kept.`, error.params)
          }
          throw error
        } finally {
          onDone()
        }
      }}
    >
      <div class="fields">
        <Field name="count" label="How many keys" inputMode="numeric" defaultValue="100" />
      </div>
      {progress === undefined ? null : (
        <div class="progress">
          <progress max={progress.count} value={progress.made} aria-label="Keys generated" />
          <span role="status">{formatNumber(progress.made)} of {formatNumber(progress.count)} keys</span>
        </div>
      )}
    </Form>
  )
}

export const GeneratorDetail = ({ params }: { readonly params: Record<string, string> }) => {
  const { api, canWrite } = useSigned()
  const id = Number(params.id)
  const generator = useLoad((signal) => call(api.generators.get({ params: { id } }), { signal }), [id])
  const g = generator.data?.data
  return (
    <Page
      title={g?.name ?? `Generator #${params.id}`}
      busy={generator.loading}
      actions={canWrite && g !== undefined ? (
        <Action
          label="Delete"
          danger
          run={() => call(api.generators.delete({ params: { id }, payload: {} }))}
          onDone={() => navigate("/generators")}
          confirm={{
            title: "Delete this generator?",
            body: <p>Its {formatNumber(g.pool_size)} pending pool keys are deleted too; licenses already issued from it stay.</p>,
            confirmLabel: "Delete"
          }}
        />
      ) : undefined}
    >
      <ErrorNote error={generator.error} />
      {g === undefined ? (generator.loading ? <Loading /> : null) : (
        <>
          <Panel title="Generator">
            <Facts
              items={[
                ["Pool", <>{formatNumber(g.pool_size)} pending keys · <Link href={`/licenses${queryString({ generator_id: g.id, status: "pending" })}`}>see them</Link></>],
                ["Issued", <Link href={`/licenses${queryString({ generator_id: g.id })}`}>licenses made by it</Link>],
                ["Key shape", <code>{g.prefix}{"X".repeat(g.chunk_length)}-{"X".repeat(g.chunk_length)}-{"X".repeat(g.chunk_length)}-{"X".repeat(g.chunk_length)}</code>],
                ["Alphabet", <code>{g.charset}</code>],
                ["Product", g.product_id],
                ["Default seats", g.default_max_activations],
                ["Default valid days", g.default_valid_days],
                ["Default overage", g.default_overage_strategy],
                ["Floating by default", g.default_is_floating === null ? null : g.default_is_floating ? "yes" : "no"],
                ["Created", formatTime(g.created_at)],
                ["Updated", formatTime(g.updated_at)]
              ]}
            />
          </Panel>
          {canWrite ? (
            <div class="columns">
              <Panel title="Generate keys into the pool">
                <GenerateForm generator={g} onDone={generator.reload} />
              </Panel>
              <Disclosure summary="Edit generator">
                <Form
                  key={g.updated_at}
                  label="Edit generator"
                  submitLabel="Save"
                  onSubmit={async (v) => {
                    await call(api.generators.update({ params: { id }, payload: defined({ name: v.text("name"), ...generatorFields(v, true) }) }))
                    generator.reload()
                  }}
                >
                  <GeneratorFields current={g} />
                </Form>
              </Disclosure>
            </div>
          ) : null}
        </>
      )}
    </Page>
  )
}
