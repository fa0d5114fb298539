/**
 * The OpenAPI document is part of the wire contract: it must change only on purpose. The test builds it offline
 * (as served under the default `/api`) and compares it with the committed fixture. After a deliberate change,
 * regenerate the fixture with `LM_UPDATE_OPENAPI=1 npx vitest run packages/http/test/openapi-snapshot.test.ts`.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { expect, it } from "vitest"
import { Api } from "@lm/api"
import { openApiDocument } from "../src/server/Http.js"

const fixture = fileURLToPath(new URL("./fixtures/openapi.json", import.meta.url))

/** JSON with object keys sorted, so the fixture's diff shows what changed and not the order it was built in. */
const canonical = (value: unknown): unknown =>
  Array.isArray(value) ? value.map(canonical)
  : typeof value === "object" && value !== null
  ? Object.fromEntries(Object.keys(value).sort().map((key) => [key, canonical((value as Record<string, unknown>)[key])]))
  : value

it("the OpenAPI document is the committed one", () => {
  const document = `${JSON.stringify(canonical(openApiDocument(Api, "/api")), null, 2)}\n`
  if (process.env.LM_UPDATE_OPENAPI === "1") writeFileSync(fixture, document)
  expect(document).toBe(readFileSync(fixture, "utf8"))
})
