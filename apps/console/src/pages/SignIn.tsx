/**
 * Sign-in with an API key (consumer key and secret). The key is tried on a read, then on the API key list, which
 * only a `read_write` key may read: a `read` key signs in without write controls; a `write` key cannot read and is
 * refused here.
 */
import { call, ConsoleError, makeApi, type Scope } from "../api.js"
import type { Session } from "../session.js"
import { Field, Form } from "../ui.js"

const keyPattern = /^ck_[0-9a-f]{40}$/
const secretPattern = /^cs_[0-9a-f]{40}$/

export const SignIn = (props: { readonly notice?: string | undefined; readonly onSignedIn: (session: Session) => void }) => (
  <main id="main" class="sign-in">
    <h1>Licensing console</h1>
    <p>Sign in with an API key. It is kept in this tab only, until you sign out or close the tab.</p>
    {props.notice === undefined ? null : <p class="notice" role="status">{props.notice}</p>}
    <Form
      label="Sign in"
      submitLabel="Sign in"
      busyLabel="Signing in…"
      onSubmit={async (values) => {
        const consumerKey = values.text("consumer_key") ?? ""
        const consumerSecret = values.text("consumer_secret") ?? ""
        const params: Record<string, string> = {}
        if (!keyPattern.test(consumerKey)) params.consumer_key = "must be ck_ followed by 40 lowercase hex characters"
        if (!secretPattern.test(consumerSecret)) params.consumer_secret = "must be cs_ followed by 40 lowercase hex characters"
        if (Object.keys(params).length > 0) throw new ConsoleError("invalid_input", 400, "Check the key and the secret.", params)
        const api = makeApi({ consumerKey, consumerSecret })
        await call(api.licenses.list({ query: { per_page: 1 } })).catch((error: unknown) => {
          if (error instanceof ConsoleError && error.status === 401) {
            throw new ConsoleError(error.code, 401, "The server does not know this key and secret (or the key was revoked).")
          }
          if (error instanceof ConsoleError && error.status === 403) {
            throw new ConsoleError(error.code, 403, `${error.message} The console needs a key with the read or read_write scope.`)
          }
          throw error
        })
        const scope: Scope = await call(api["api-keys"].list({ query: { per_page: 1 } })).then(
          () => "read_write" as const,
          (error: unknown) => {
            if (error instanceof ConsoleError && error.status === 403) return "read" as const
            throw error
          }
        )
        props.onSignedIn({ consumerKey, consumerSecret, scope })
      }}
    >
      <Field name="consumer_key" label="Consumer key" placeholder="ck_…" autoComplete="username" spellcheck={false} required />
      <Field name="consumer_secret" label="Consumer secret" placeholder="cs_…" type="password" autoComplete="current-password" required />
    </Form>
  </main>
)
