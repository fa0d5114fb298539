/**
 * Releases: the list (filters by product and channel, in the URL), publishing one, either by uploading its
 * artifact (multipart, with a progress bar) or by naming an artifact hosted elsewhere, and deleting one (its
 * version typed to confirm: clients are no longer offered it, and its uploaded artifact is removed).
 */
import { useState } from "preact/hooks"
import { call, ConsoleError, names } from "../api.js"
import { formatBytes, formatNumber, formatTime } from "../format.js"
import { useQueryState } from "../router.js"
import { Action, defined, Disclosure, Field, Filters, Form, Listed, Page, Select, Table, TextArea, useLoad, useSigned } from "../ui.js"
import { numberParam } from "./Licenses.js"

type Channel = (typeof names.releaseChannels)[number]

const PublishForm = ({ onDone }: { readonly onDone: () => void }) => {
  const { api } = useSigned()
  const [progress, setProgress] = useState<{ sent: number; total: number } | undefined>(undefined)
  return (
    <Form
      label="Publish a release"
      submitLabel="Publish"
      busyLabel="Uploading…"
      onSubmit={async (v, form) => {
        const file = v.file("file")
        const artifactUrl = v.text("artifact_url")
        const productId = v.int("product_id")
        const version = v.text("version") ?? ""
        const fields = defined({
          channel: v.text("channel") as Channel | undefined,
          changelog: v.text("changelog"),
          min_app_version: v.text("min_app_version")
        })
        if (file === undefined && artifactUrl === undefined) {
          throw new ConsoleError("invalid_input", 400, "Choose a file to upload, or give the URL of an artifact hosted elsewhere.", { file: "is required (or an artifact URL)" })
        }
        if (file === undefined) {
          await call(api.releases.publish({ payload: { product_id: productId as number, version, artifact_url: artifactUrl!, ...fields } }))
        } else {
          // The fields first, then the file, which the server streams to its artifact store.
          const body = new FormData()
          if (productId !== undefined) body.set("product_id", String(productId))
          body.set("version", version)
          for (const [name, value] of Object.entries(fields)) body.set(name, value)
          body.set("file", file, file.name)
          setProgress({ sent: 0, total: file.size })
          await call(api.releases.publish({ payload: body }), { progress: (sent, total) => setProgress({ sent, total: total || file.size }) })
        }
        form.reset()
        setProgress(undefined)
        onDone()
      }}
    >
      <div class="fields">
        <Field name="product_id" label="Product id" inputMode="numeric" required />
        <Field name="version" label="Version" placeholder="1.4.0" spellcheck={false} required />
        <Select name="channel" label="Channel" options={names.releaseChannels} value="stable" />
        <Field name="min_app_version" label="Oldest app version that may install it" spellcheck={false} />
        <Field name="file" label="Artifact file" type="file" />
        <Field name="artifact_url" label="Or an artifact URL" type="url" placeholder="https://…" />
      </div>
      <TextArea name="changelog" label="Changelog" />
      {progress === undefined ? null : (
        <div class="progress">
          <progress max={Math.max(1, progress.total)} value={progress.sent} aria-label="Upload" />
          <span role="status" data-progress={Math.round((progress.sent / Math.max(1, progress.total)) * 100)}>
            {formatBytes(progress.sent)} of {formatBytes(progress.total)} ({formatNumber(Math.round((progress.sent / Math.max(1, progress.total)) * 100))} %)
          </span>
        </div>
      )}
    </Form>
  )
}

export const Releases = () => {
  const { api, canWrite } = useSigned()
  const { values } = useQueryState()
  const query = defined({
    product_id: numberParam(values.product_id),
    channel: values.channel as Channel | undefined,
    page: numberParam(values.page),
    per_page: numberParam(values.per_page)
  })
  const list = useLoad((signal) => call(api.releases.list({ query }), { signal }), [location.search])
  return (
    <Page title="Releases" busy={list.loading}>
      {canWrite ? (
        <Disclosure summary="Publish a release">
          <PublishForm onDone={list.reload} />
        </Disclosure>
      ) : null}
      <Filters label="Filter releases" names={["product_id", "channel"]}>
        <Field name="product_id" label="Product" inputMode="numeric" defaultValue={values.product_id ?? ""} />
        <Select name="channel" label="Channel" options={names.releaseChannels} empty="Any" value={values.channel ?? ""} />
      </Filters>
      <Listed list={list}>
        {(answer) => (
          <Table
            caption="Releases"
            head={["Product", "Version", "Channel", "Artifact", "Size", "SHA-256", "Released", ...(canWrite ? [""] : [])]}
            empty="No release matches."
            rows={answer.data.releases.map((r) => ({
              key: r.id,
              cells: [
                r.product_id,
                <strong>{r.version}</strong>,
                r.channel,
                r.artifact_url === null ? r.filename ?? "—" : <a href={r.artifact_url} rel="noreferrer noopener" target="_blank">{r.filename ?? "external"}</a>,
                formatBytes(r.size),
                r.sha256 === null ? "—" : <code title={r.sha256}>{r.sha256.slice(0, 12)}…</code>,
                formatTime(r.released_at),
                ...(canWrite
                  ? [
                    <Action
                      label="Delete"
                      danger
                      run={() => call(api.releases.delete({ params: { id: r.id }, payload: {} }))}
                      onDone={list.reload}
                      confirm={{
                        title: `Delete release ${r.version} of product ${r.product_id}?`,
                        body: (
                          <p>
                            Update checks no longer offer it, download links already given out stop working
                            {r.artifact_url === null ? ", and its uploaded artifact is removed from the artifact store" : ""}.
                          </p>
                        ),
                        confirmLabel: "Delete release",
                        typed: r.version
                      }}
                    />
                  ]
                  : [])
              ]
            }))}
          />
        )}
      </Listed>
    </Page>
  )
}
