/**
 * The console's building blocks: the signed-in context, loading data, forms whose field errors come from the
 * API's envelope (`data.params`), actions that ask first and show their error beside the button, tables, pages of
 * lists, and the secret shown once.
 */
import type { ComponentChildren, TargetedSubmitEvent } from "preact"
import { createContext } from "preact"
import { useContext, useEffect, useId, useRef, useState } from "preact/hooks"
import { type ConsoleApi, ConsoleError, type ListMeta } from "./api.js"
import { formatNumber } from "./format.js"
import { useQueryState } from "./router.js"
import type { Session } from "./session.js"

/** What every page of a signed-in console has. */
export interface Signed {
  readonly session: Session
  readonly api: ConsoleApi
  /** A `read` key sees no write controls. */
  readonly canWrite: boolean
  readonly signOut: (message?: string) => void
}

export const SignedContext = createContext<Signed | undefined>(undefined)

export const useSigned = (): Signed => {
  const signed = useContext(SignedContext)
  if (signed === undefined) throw new Error("not signed in")
  return signed
}

/** Any thrown value as a {@link ConsoleError}. */
export const asConsoleError = (error: unknown): ConsoleError =>
  error instanceof ConsoleError ? error : new ConsoleError("invalid_response", 0, error instanceof Error ? error.message : String(error))

/** Data a page loads: kept while it reloads, so the page does not flash. */
export interface Loaded<A> {
  readonly data: A | undefined
  readonly error: ConsoleError | undefined
  readonly loading: boolean
  readonly reload: () => void
}

/** Loads with `load` whenever `deps` change; a load overtaken by a newer one is abandoned. */
export const useLoad = <A,>(load: (signal: AbortSignal) => Promise<A>, deps: ReadonlyArray<unknown>): Loaded<A> => {
  const [state, setState] = useState<{ data: A | undefined; error: ConsoleError | undefined; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true
  })
  const [version, setVersion] = useState(0)
  useEffect(() => {
    const controller = new AbortController()
    setState((s) => ({ ...s, loading: true }))
    load(controller.signal).then(
      (data) => !controller.signal.aborted && setState({ data, error: undefined, loading: false }),
      (error: unknown) => !controller.signal.aborted && setState((s) => ({ ...s, error: asConsoleError(error), loading: false }))
    )
    return () => controller.abort()
  }, [...deps, version])
  return { ...state, reload: () => setVersion((v) => v + 1) }
}

/** The API's message, in a live region so that screen readers announce it. */
export const ErrorNote = ({ error }: { readonly error: ConsoleError | undefined }) =>
  error === undefined ? null : (
    <p class="error" role="alert">
      {error.message}
      {error.code !== "invalid_input" && error.status !== 0 ? <span class="code"> ({error.code})</span> : null}
    </p>
  )

export const Loading = ({ label = "Loading…" }: { readonly label?: string }) => <p class="loading" role="status" aria-live="polite">{label}</p>

/** A page's frame: its title, the controls beside it, and what it shows. */
export const Page = (props: { readonly title: ComponentChildren; readonly actions?: ComponentChildren; readonly children: ComponentChildren; readonly busy?: boolean }) => (
  <section class="page" aria-busy={props.busy === true ? "true" : undefined}>
    <header class="page-header">
      <h1 tabIndex={-1} id="page-title">{props.title}</h1>
      {props.actions === undefined ? null : <div class="page-actions">{props.actions}</div>}
    </header>
    {props.children}
  </section>
)

/** A titled box within a page. */
export const Panel = (props: { readonly title: ComponentChildren; readonly children: ComponentChildren; readonly class?: string; readonly actions?: ComponentChildren }) => (
  <section class={`panel ${props.class ?? ""}`}>
    <header class="panel-header">
      <h2>{props.title}</h2>
      {props.actions}
    </header>
    {props.children}
  </section>
)

/** A status as a coloured word. */
export const Badge = ({ value }: { readonly value: string | null | undefined }) =>
  value === null || value === undefined ? <span>—</span> : <span class={`badge badge-${value}`}>{value}</span>

/** Name–value pairs. */
export const Facts = ({ items }: { readonly items: ReadonlyArray<readonly [string, ComponentChildren]> }) => (
  <dl class="facts">
    {items.map(([name, value]) => (
      <div key={name}>
        <dt>{name}</dt>
        <dd>{value === null || value === undefined || value === "" ? "—" : value}</dd>
      </div>
    ))}
  </dl>
)

/** A table that scrolls sideways on a narrow screen rather than squeezing its columns. */
export const Table = (props: {
  readonly caption: string
  readonly head: ReadonlyArray<string>
  readonly rows: ReadonlyArray<{ readonly key: string | number; readonly cells: ReadonlyArray<ComponentChildren> }>
  readonly empty?: string
}) => (
  <div class="table-wrap" tabIndex={0} role="region" aria-label={props.caption}>
    <table>
      <caption class="visually-hidden">{props.caption}</caption>
      <thead>
        <tr>{props.head.map((h) => <th scope="col" key={h}>{h}</th>)}</tr>
      </thead>
      <tbody>
        {props.rows.length === 0
          ? <tr><td colSpan={props.head.length} class="empty">{props.empty ?? "Nothing here yet."}</td></tr>
          : props.rows.map((row) => <tr key={row.key}>{row.cells.map((cell, i) => <td key={i}>{cell}</td>)}</tr>)}
      </tbody>
    </table>
  </div>
)

/** Previous and next pages of a list, with where the list is. */
export const Pager = ({ meta, onPage }: { readonly meta: ListMeta | undefined; readonly onPage: (page: number) => void }) => {
  if (meta === undefined) return null
  const last = Math.max(1, meta.total_pages)
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={meta.page <= 1} onClick={() => onPage(meta.page - 1)}>← Previous</button>
      <span>
        Page {formatNumber(meta.page)} of {formatNumber(last)} · {formatNumber(meta.total)} in all
      </span>
      <button type="button" disabled={meta.page >= last} onClick={() => onPage(meta.page + 1)}>Next →</button>
    </nav>
  )
}

/** The field errors of the form being shown, by field name. */
const FieldErrors = createContext<Readonly<Record<string, string>>>({})

/** Reads a form's values as the API wants them; a value that cannot be read throws a field error. */
export class FormValues {
  private readonly data: FormData
  constructor(data: FormData) {
    this.data = data
  }
  private raw(name: string): string {
    const value = this.data.get(name)
    return typeof value === "string" ? value.trim() : ""
  }
  /** The text, or undefined when empty. */
  text(name: string): string | undefined {
    const value = this.raw(name)
    return value === "" ? undefined : value
  }
  /** A whole number, or undefined when empty. */
  int(name: string): number | undefined {
    const value = this.raw(name)
    if (value === "") return undefined
    if (!/^-?\d+$/.test(value)) throw new ConsoleError("invalid_input", 400, `Invalid input: ${name}.`, { [name]: "must be a whole number" })
    return Number(value)
  }
  /** A whole number, or null when empty (a cleared setting). */
  intOrNull(name: string): number | null {
    return this.int(name) ?? null
  }
  textOrNull(name: string): string | null {
    return this.text(name) ?? null
  }
  bool(name: string): boolean {
    return this.data.get(name) !== null
  }
  /** A `datetime-local` or `date` field as epoch milliseconds (the API's time input), or undefined when empty. */
  time(name: string): number | undefined {
    const value = this.raw(name)
    if (value === "") return undefined
    const t = new Date(value).getTime()
    if (Number.isNaN(t)) throw new ConsoleError("invalid_input", 400, `Invalid input: ${name}.`, { [name]: "must be a date and time" })
    return t
  }
  all(name: string): Array<string> {
    return this.data.getAll(name).filter((v): v is string => typeof v === "string")
  }
  file(name: string): File | undefined {
    const value = this.data.get(name)
    // An empty file input sends a nameless, empty file.
    return value instanceof File && value.name !== "" ? value : undefined
  }
}

/**
 * A form that runs `onSubmit` with its values: the button shows that it works, the API's message is shown
 * beside the button, and each field error beside its field.
 */
export const Form = (props: {
  readonly onSubmit: (values: FormValues, form: HTMLFormElement) => Promise<unknown>
  readonly submitLabel: string
  readonly busyLabel?: string
  readonly children: ComponentChildren
  readonly class?: string
  readonly label?: string
  readonly danger?: boolean
}) => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<ConsoleError | undefined>(undefined)
  const submit = async (event: TargetedSubmitEvent<HTMLFormElement>) => {
    event.preventDefault()
    const form = event.currentTarget
    setBusy(true)
    setError(undefined)
    try {
      await props.onSubmit(new FormValues(new FormData(form)), form)
    } catch (e) {
      setError(asConsoleError(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <form class={`form ${props.class ?? ""}`} onSubmit={submit} noValidate aria-label={props.label}>
      <FieldErrors.Provider value={error?.params ?? {}}>{props.children}</FieldErrors.Provider>
      <div class="form-actions">
        <button type="submit" class={props.danger === true ? "danger" : "primary"} disabled={busy}>
          {busy ? props.busyLabel ?? "Working…" : props.submitLabel}
        </button>
        <ErrorNote error={error} />
      </div>
    </form>
  )
}

/** The attributes a {@link Field}'s input may take. */
interface InputProps {
  readonly type?: "text" | "number" | "password" | "search" | "url" | "email" | "date" | "datetime-local" | "checkbox" | "file"
  readonly placeholder?: string
  readonly autoComplete?: string
  readonly spellcheck?: boolean
  readonly required?: boolean
  readonly inputMode?: "numeric" | "decimal" | "text"
  readonly defaultValue?: string
  readonly defaultChecked?: boolean
  readonly maxLength?: number
}

/** A labelled input of a {@link Form}, with the API's error for its name beside it. */
export const Field = (props: { readonly name: string; readonly label: string; readonly hint?: string } & InputProps) => {
  const { name, label, hint, ...input } = props
  const error = useContext(FieldErrors)[name]
  const id = useId()
  const checkbox = input.type === "checkbox"
  const control = (
    <input
      id={id}
      name={name}
      aria-invalid={error === undefined ? undefined : "true"}
      aria-describedby={error === undefined && hint === undefined ? undefined : `${id}-note`}
      {...(input as Record<string, unknown>)}
    />
  )
  return (
    <div class={`field ${checkbox ? "field-check" : ""}`}>
      {checkbox ? control : null}
      <label for={id}>{label}</label>
      {checkbox ? null : control}
      {error !== undefined
        ? <span class="field-error" id={`${id}-note`}>{error}</span>
        : hint === undefined ? null : <span class="hint" id={`${id}-note`}>{hint}</span>}
    </div>
  )
}

/** A labelled select of a {@link Form}. */
export const Select = (props: {
  readonly name: string
  readonly label: string
  readonly options: ReadonlyArray<string | readonly [string, string]>
  readonly value?: string | undefined
  readonly empty?: string
  readonly onChange?: (value: string) => void
}) => {
  const error = useContext(FieldErrors)[props.name]
  const id = useId()
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <select
        id={id}
        name={props.name}
        value={props.value}
        aria-invalid={error === undefined ? undefined : "true"}
        onChange={props.onChange === undefined ? undefined : (e) => props.onChange!(e.currentTarget.value)}
      >
        {props.empty === undefined ? null : <option value="">{props.empty}</option>}
        {props.options.map((o) => {
          const [value, text] = typeof o === "string" ? [o, o] : o
          return <option key={value} value={value}>{text}</option>
        })}
      </select>
      {error === undefined ? null : <span class="field-error">{error}</span>}
    </div>
  )
}

/** A labelled text area of a {@link Form}. */
export const TextArea = (props: { readonly name: string; readonly label: string; readonly value?: string; readonly rows?: number }) => {
  const error = useContext(FieldErrors)[props.name]
  const id = useId()
  return (
    <div class="field field-wide">
      <label for={id}>{props.label}</label>
      <textarea id={id} name={props.name} rows={props.rows ?? 3} aria-invalid={error === undefined ? undefined : "true"}>{props.value}</textarea>
      {error === undefined ? null : <span class="field-error">{error}</span>}
    </div>
  )
}

/** What a destructive action asks before it runs. */
export interface Confirmation {
  readonly title: string
  readonly body: ComponentChildren
  readonly confirmLabel: string
  /** The text a person must type to confirm (e.g. the license key, for an irreversible action). */
  readonly typed?: string
}

/** A modal question (the browser's `<dialog>`: focus stays in it, Escape cancels). */
export const ConfirmDialog = (props: { readonly confirmation: Confirmation; readonly onAnswer: (yes: boolean) => void }) => {
  const ref = useRef<HTMLDialogElement>(null)
  const [typed, setTyped] = useState("")
  const id = useId()
  useEffect(() => {
    const dialog = ref.current
    if (dialog !== null && !dialog.open) dialog.showModal()
  }, [])
  const { confirmation } = props
  const ready = confirmation.typed === undefined || typed.trim() === confirmation.typed
  return (
    <dialog ref={ref} class="confirm" aria-labelledby={`${id}-title`} onCancel={() => props.onAnswer(false)}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault()
          if (ready) props.onAnswer(true)
        }}
      >
        <h2 id={`${id}-title`}>{confirmation.title}</h2>
        <div class="confirm-body">{confirmation.body}</div>
        {confirmation.typed === undefined ? null : (
          <div class="field field-wide">
            <label for={`${id}-typed`}>Type <code>{confirmation.typed}</code> to confirm</label>
            <input id={`${id}-typed`} autoComplete="off" spellcheck={false} value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
          </div>
        )}
        <div class="form-actions">
          <button type="button" onClick={() => props.onAnswer(false)} autoFocus>Cancel</button>
          <button type="submit" class="danger" disabled={!ready}>{confirmation.confirmLabel}</button>
        </div>
      </form>
    </dialog>
  )
}

/**
 * A button that runs one API call: it asks first when given a confirmation, shows that it works, and shows the
 * API's message beside itself when the call fails; `onDone` gets the answer.
 */
export const Action = <A,>(props: {
  readonly label: string
  readonly run: () => Promise<A>
  readonly onDone?: (answer: A) => void
  readonly confirm?: Confirmation
  readonly danger?: boolean
  readonly busyLabel?: string
}) => {
  const [busy, setBusy] = useState(false)
  const [asking, setAsking] = useState(false)
  const [error, setError] = useState<ConsoleError | undefined>(undefined)
  const go = async () => {
    setBusy(true)
    setError(undefined)
    try {
      const answer = await props.run()
      props.onDone?.(answer)
    } catch (e) {
      setError(asConsoleError(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <span class="action">
      <button
        type="button"
        class={props.danger === true ? "danger" : undefined}
        disabled={busy}
        onClick={() => props.confirm === undefined ? go() : setAsking(true)}
      >
        {busy ? props.busyLabel ?? `${props.label}…` : props.label}
      </button>
      {asking && props.confirm !== undefined
        ? (
          <ConfirmDialog
            confirmation={props.confirm}
            onAnswer={(yes) => {
              setAsking(false)
              if (yes) go()
            }}
          />
        )
        : null}
      <ErrorNote error={error} />
    </span>
  )
}

/** A secret the API shows only once: kept on screen until dismissed, with a copy button. */
export const SecretOnce = (props: { readonly title: string; readonly values: ReadonlyArray<readonly [string, string]>; readonly onDismiss: () => void }) => {
  const [copied, setCopied] = useState<string | undefined>(undefined)
  return (
    <div class="secret" role="alert">
      <h2>{props.title}</h2>
      <p>Copy it now: it is not shown again.</p>
      <dl class="facts">
        {props.values.map(([name, value]) => (
          <div key={name}>
            <dt>{name}</dt>
            <dd>
              <code class="secret-value" data-name={name}>{value}</code>{" "}
              <button
                type="button"
                onClick={() => navigator.clipboard?.writeText(value).then(() => setCopied(name), () => setCopied(undefined))}
              >
                {copied === name ? "Copied" : "Copy"}
              </button>
            </dd>
          </div>
        ))}
      </dl>
      <button type="button" onClick={props.onDismiss}>Done</button>
    </div>
  )
}

/** A section that opens on demand (a form to create or edit), closed by default. */
export const Disclosure = (props: { readonly summary: string; readonly children: ComponentChildren; readonly open?: boolean }) => (
  <details class="disclosure" open={props.open}>
    <summary>{props.summary}</summary>
    <div class="disclosure-body">{props.children}</div>
  </details>
)

/**
 * A list the page loaded, paged in the URL: its error, then (once an answer came) what `children` draws of the
 * answer and its pager.
 */
export const Listed = <A extends { readonly meta: ListMeta },>(props: {
  readonly list: Loaded<A>
  readonly children: (answer: A) => ComponentChildren
}) => {
  const { set } = useQueryState()
  const { list } = props
  return (
    <>
      <ErrorNote error={list.error} />
      {list.data === undefined ? (list.loading ? <Loading /> : null) : (
        <>
          {props.children(list.data)}
          <Pager meta={list.data.meta} onPage={(page) => set({ page })} />
        </>
      )}
    </>
  )
}

/**
 * A list's filter bar, kept in the page's URL query: on submit each of `names` takes its field's trimmed text (a
 * name in `dates` as an ISO instant; empty leaves the parameter out) and the list goes back to its first page;
 * `clear` adds a button that removes them all. Its fields show the URL's values (it is drawn anew when they change).
 */
export const Filters = (props: {
  readonly label: string
  readonly names: ReadonlyArray<string>
  readonly dates?: ReadonlyArray<string>
  readonly submitLabel?: string
  readonly clear?: boolean
  readonly children: ComponentChildren
}) => {
  const { set } = useQueryState()
  const filter = (data: FormData) =>
    Object.fromEntries(props.names.map((name) => {
      const text = String(data.get(name) ?? "").trim()
      return [name, props.dates?.includes(name) === true && text !== "" ? new Date(text).toISOString() : text]
    }))
  return (
    <form
      class="filters"
      key={location.search}
      aria-label={props.label}
      onSubmit={(e) => {
        e.preventDefault()
        set(filter(new FormData(e.currentTarget)))
      }}
    >
      {props.children}
      <div class="form-actions">
        <button type="submit" class="primary">{props.submitLabel ?? "Filter"}</button>
        {props.clear === true
          ? <button type="button" onClick={() => set(Object.fromEntries(props.names.map((name) => [name, undefined])))}>Clear</button>
          : null}
      </div>
    </form>
  )
}

/** An `<input type="datetime-local">` value for an ISO time, in the browser's time zone. */
export const localInputValue = (iso: string | null | undefined): string => {
  if (iso === null || iso === undefined) return ""
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return ""
  const pad = (n: number) => String(n).padStart(2, "0")
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`
}

/** The fields of an object whose value is not undefined (optional keys of a request are left out, not undefined). */
export const defined = <T extends object>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as { [K in keyof T]: Exclude<T[K], undefined> }
