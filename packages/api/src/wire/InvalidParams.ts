/**
 * Turns a schema failure into the contract's `data.params`: one entry per bad field, named by its path, with a
 * short message that says what the contract expects (`{"license_key": "is required"}`, `"must be an integer from 0
 * to 2147483647, or null"`). A value of the wrong type is described from the field's schema (its wire form, {@link
 * expectedOf}), never in the validation library's words (`number | null`). A `message` annotation on a schema or
 * check wins.
 */
import { SchemaAST, SchemaIssue } from "effect"
import type { Schema } from "effect"

/** The message of a check that says in full what it expects (`"must be ..."`), if the check has one. */
const mustBe = (check: SchemaAST.Check<any>): string | undefined => {
  const message = check.annotations?.message
  return typeof message === "string" && message.startsWith("must be ") ? message.slice("must be ".length) : undefined
}

const hasCheck = (ast: SchemaAST.AST, id: string): boolean =>
  (ast.checks ?? []).some((check) => (check.annotations?.representation as { id?: string } | undefined)?.id === id)

/** A literal as a client writes it: strings bare (`deny`), others as JSON (`true`, `1`). */
const literalText = (literal: unknown): string => typeof literal === "string" ? literal : JSON.stringify(literal)

/**
 * What a value of this schema is, in the contract's words, read from the AST of its wire (encoded) form:
 * `an integer from 1 to 31536000`, `one of deny, allow_2x`, `an ISO 8601 date-time ...`, `a string, or null`.
 * The last check that says `must be ...` names it best (it is the schema's own word on its bounds), else the last
 * check's `expected` annotation (`an integer`).
 */
export const expectedOf = (schema: SchemaAST.AST): string => {
  const ast = SchemaAST.toEncoded(schema)
  const checks = ast.checks ?? []
  const own = checks.map(mustBe).filter((m) => m !== undefined).at(-1) ??
    checks.map((check) => annotated(check.annotations, "expected")).filter((m) => m !== undefined).at(-1)
  if (own !== undefined) return own
  switch (ast._tag) {
    case "Union": {
      const literals = ast.types.filter((t): t is SchemaAST.Literal => t._tag === "Literal")
      const others = ast.types.filter((t) => t._tag !== "Literal" && t._tag !== "Null").map(expectedOf)
      const parts = [...others, ...(literals.length === 0 ? [] : [`one of ${literals.map((l) => literalText(l.literal)).join(", ")}`])]
      const withNull = ast.types.some((t) => t._tag === "Null") ? [...parts, "null"] : parts
      return withNull.length <= 1 ? withNull.join("") : `${withNull.slice(0, -1).join(", ")}, or ${withNull.at(-1)}`
    }
    case "Literal":
      return literalText(ast.literal)
    case "Number":
      return hasCheck(ast, "effect/schema/isInt") ? "an integer" : "a number"
    case "String":
      return "a string"
    case "Boolean":
      return "true or false"
    case "Null":
      return "null"
    case "Arrays":
      return "an array"
    case "Objects":
    case "ObjectKeyword":
      return "an object"
    case "Suspend":
      return expectedOf(ast.thunk())
    default:
      return "a valid value"
  }
}

/** A `message` annotation (or the one named `key`) of a schema, check or issue, if it has one. */
const annotated = (annotations: { readonly [key: string]: unknown } | undefined, key = "message"): string | undefined =>
  typeof annotations?.[key] === "string" ? annotations[key] as string : undefined

/** The message of a check that failed: its own `message`, else what it expects (`must be an integer`). */
const checkMessage = (issue: SchemaIssue.Filter): string | undefined => {
  const own = annotated(issue.filter.annotations)
  if (own !== undefined || issue.issue._tag !== "InvalidValue") return own
  const expected = annotated(issue.issue.annotations, "expected") ?? annotated(issue.filter.annotations, "expected")
  return annotated(issue.issue.annotations) ?? (expected === undefined ? undefined : `must be ${expected}`)
}

/** The message of a leaf: the contract's words for a missing, unknown or mistyped field. */
const leafMessage = (issue: SchemaIssue.Leaf): string => {
  switch (issue._tag) {
    case "MissingKey":
      return annotated(issue.annotations, "messageMissingKey") ?? "is required"
    case "UnexpectedKey":
      return annotated(issue.ast.annotations, "messageUnexpectedKey") ?? "is not allowed"
    case "InvalidType":
      return annotated(issue.ast.annotations) ?? `must be ${expectedOf(issue.ast)}`
    case "InvalidValue": {
      const expected = annotated(issue.annotations, "expected")
      return annotated(issue.annotations) ?? (expected === undefined ? "is not valid" : `must be ${expected}`)
    }
    case "Forbidden":
      return "is not allowed"
    case "OneOf":
      return `must be ${expectedOf(issue.ast)}`
  }
}

/** Each bad field's path and message; a failed check's own message wins over what it wraps. */
const messages = (
  issue: SchemaIssue.Issue,
  path: ReadonlyArray<PropertyKey>,
  override: string | undefined
): Array<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }> => {
  switch (issue._tag) {
    case "Filter":
      return messages(issue.issue, path, override ?? checkMessage(issue))
    case "Encoding":
      return messages(issue.issue, path, override)
    case "Pointer":
      return messages(issue.issue, [...path, ...issue.path], override)
    case "Composite":
      return issue.issues.flatMap((inner) => messages(inner, path, override))
    case "AnyOf":
      // A value that matches no member of a union (an integer or null): say what the union holds.
      return issue.issues.length > 0
        ? issue.issues.flatMap((inner) => messages(inner, path, override))
        : [{ path, message: override ?? annotated(issue.ast.annotations) ?? `must be ${expectedOf(issue.ast)}` }]
    default:
      return [{ path, message: override ?? leafMessage(issue) }]
  }
}

const segment = (key: PropertyKey | { readonly key: PropertyKey }): PropertyKey =>
  typeof key === "object" ? key.key : key

/** `["components", 0, "kind"]` becomes `components[0].kind`. */
const pathName = (path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }>): string => {
  let name = ""
  for (const part of path) {
    const key = segment(part)
    if (typeof key === "number") name += `[${key}]`
    else name += name === "" ? String(key) : `.${String(key)}`
  }
  return name
}

/**
 * The `data.params` for a schema error. `whole` names an issue about the value as a whole (e.g. a body that
 * is not an object); only the first problem of each field is kept.
 */
export const fromSchemaError = (error: Schema.SchemaError, whole: string): Record<string, string> => {
  const params: Record<string, string> = {}
  for (const issue of messages(error.issue, [], undefined)) {
    const name = issue.path.length === 0 ? whole : pathName(issue.path)
    if (!(name in params)) params[name] = issue.message
  }
  return params
}

/** The envelope message for a set of bad fields. */
export const message = (params: Readonly<Record<string, string>>): string => {
  const names = Object.keys(params)
  return names.length === 0 ? "Invalid parameter." : `Invalid parameter(s): ${names.join(", ")}.`
}
