/**
 * API keys (a `read_write` key only, as the API allows): the list, a new key (its secret shown once), and
 * revoking one. The signed-in key is marked; revoking it signs the console out.
 */
import { useState } from "preact/hooks"
import { call, names, type Scope } from "../api.js"
import { formatTime } from "../format.js"
import { useQueryState } from "../router.js"
import { truncatedKey } from "../session.js"
import { Action, defined, Disclosure, Field, Form, Listed, Page, SecretOnce, Select, Table, useLoad, useSigned } from "../ui.js"
import { numberParam } from "./Licenses.js"

export const ApiKeys = () => {
  const { api, session, signOut } = useSigned()
  const { values } = useQueryState()
  const list = useLoad((signal) => call(api["api-keys"].list({ query: defined({ page: numberParam(values.page) }) }), { signal }), [location.search])
  const [issued, setIssued] = useState<{ consumer_key: string; consumer_secret: string } | undefined>(undefined)
  const mine = truncatedKey(session.consumerKey)
  return (
    <Page title="API keys" busy={list.loading}>
      {issued === undefined ? null : (
        <SecretOnce
          title="API key issued"
          values={[["Consumer key", issued.consumer_key], ["Consumer secret", issued.consumer_secret]]}
          onDismiss={() => setIssued(undefined)}
        />
      )}
      <Disclosure summary="New API key">
        <Form
          label="New API key"
          submitLabel="Issue key"
          onSubmit={async (v, form) => {
            const answer = await call(api["api-keys"].create({ payload: { scope: (v.text("scope") ?? "read") as Scope, ...defined({ description: v.text("description") }) } }))
            form.reset()
            setIssued(answer.data)
            list.reload()
          }}
        >
          <div class="fields">
            <Field name="description" label="What it is for" />
            <Select name="scope" label="Scope" options={names.apiKeyScopes.map((s) => [s, s === "read" ? "read (GET only)" : s === "write" ? "write (no GET)" : "read_write"] as const)} value="read" />
          </div>
        </Form>
      </Disclosure>
      <Listed list={list}>
        {(answer) => (
          <Table
            caption="API keys"
            head={["Key", "Description", "Scope", "Created", "Last used", ""]}
            empty="No key."
            rows={answer.data.api_keys.map((k) => ({
              key: k.id,
              cells: [
                <><code>{k.truncated_key}</code>{k.truncated_key === mine ? <span class="badge badge-active"> this key</span> : null}</>,
                k.description || "—",
                k.scope,
                formatTime(k.created_at),
                formatTime(k.last_access_at),
                <Action
                  label="Revoke"
                  danger
                  run={() => call(api["api-keys"].delete({ params: { id: k.id }, payload: {} }))}
                  onDone={() => k.truncated_key === mine ? signOut("You revoked the key you were signed in with.") : list.reload()}
                  confirm={{
                    title: "Revoke this key?",
                    body: k.truncated_key === mine
                      ? <p>This is the key you are signed in with: the console signs out at once.</p>
                      : <p>Every program that uses <code>{k.truncated_key}</code> is refused from now on.</p>,
                    confirmLabel: "Revoke key"
                  }}
                />
              ]
            }))}
          />
        )}
      </Listed>
    </Page>
  )
}
