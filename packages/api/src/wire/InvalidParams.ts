/**
 * Turns a schema failure into the contract's `data.params`: one entry per bad field, named by its path, with a
 * short message (`{"license_key": "is required"}`). A `message` annotation on a schema or check wins.
 */
import { SchemaIssue } from "effect"
import type { Schema } from "effect"

const leafHook: SchemaIssue.LeafHook = (issue) => {
  if (issue._tag === "MissingKey" && typeof issue.annotations?.messageMissingKey !== "string") return "is required"
  if (issue._tag === "UnexpectedKey" && typeof issue.ast.annotations?.messageUnexpectedKey !== "string") {
    return "is not allowed"
  }
  return SchemaIssue.defaultLeafHook(issue)
}

const format = SchemaIssue.makeFormatterStandardSchemaV1({ leafHook })

const articles: Record<string, string> = {
  string: "a string",
  number: "a number",
  boolean: "a boolean",
  object: "an object",
  array: "an array",
  bigint: "an integer",
  null: "null"
}

/** "Expected string" reads as "must be a string" once the field name is the key. */
const phrase = (message: string): string => {
  if (!message.startsWith("Expected ")) return message
  const expected = message.slice("Expected ".length)
  return `must be ${articles[expected] ?? expected}`
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
  for (const issue of format(error.issue).issues) {
    const name = issue.path === undefined || issue.path.length === 0 ? whole : pathName(issue.path)
    if (!(name in params)) params[name] = phrase(issue.message)
  }
  return params
}

/** The envelope message for a set of bad fields. */
export const message = (params: Readonly<Record<string, string>>): string => {
  const names = Object.keys(params)
  return names.length === 0 ? "Invalid parameter." : `Invalid parameter(s): ${names.join(", ")}.`
}
