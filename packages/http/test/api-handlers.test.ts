/**
 * Every group of the API is served with its handlers. `ApiHandlers` (`handlers/ApiHandlers.ts`) must hold each
 * group `Api` lists, with that group's handlers: the `@ts-expect-error` lines below are checked by the tests'
 * type-check (`tsc -p tsconfig.test.json`, part of `npm test` and of landing), which fails if a record missing a
 * group, or holding another group's handlers, ever compiled. At run time the server answers every endpoint of
 * every group from that endpoint's own route (the route each answer reports to the `RequestObserver`).
 */
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Api } from "@lm/api"
import { ApiHandlers, type HandlersOf } from "../src/handlers/ApiHandlers.js"
import type { AnsweredRequest } from "../src/server/RequestSteps.js"
import { startApp, type TestApp } from "./support/App.js"
import { eventually } from "../../../test/support/eventually.js"

// A group added to the API without handlers does not compile: `Property 'extra' is missing …`.
class ExtraGroup extends HttpApiGroup.make("extra").add(HttpApiEndpoint.get("ping", "/ping")) {}
const apiWithExtra = Api.add(ExtraGroup)
// @ts-expect-error the record has no entry for the group "extra"
void (ApiHandlers satisfies HandlersOf<typeof apiWithExtra>)

// Nor does the record without one of the API's groups, or with another group's handlers under a group's name.
const { policies: _policies, ...withoutPolicies } = ApiHandlers
// @ts-expect-error the record has no entry for the group "policies"
void (withoutPolicies satisfies HandlersOf<typeof Api>)
// @ts-expect-error the entry "policies" holds the handlers of "licenses"
void ({ ...ApiHandlers, policies: ApiHandlers.licenses } satisfies HandlersOf<typeof Api>)

/** Every endpoint of the API, with its group's name. */
const endpoints = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => ({ group: group.identifier, method: endpoint.method, path: endpoint.path }))
)

describe("the API's handlers", () => {
  it("are listed for every group of the API, and for no other", () => {
    expect(Object.keys(ApiHandlers).sort()).toEqual(Object.keys(Api.groups).sort())
  })

  describe("served", () => {
    let app: TestApp
    const answered: Array<AnsweredRequest> = []
    beforeAll(async () => {
      app = await startApp("memory", { requestObserver: (request) => answered.push(request) })
    })
    afterAll(() => app?.close())

    it("answer every endpoint of every group from its own route", async () => {
      expect(endpoints.length).toBeGreaterThan(Object.keys(Api.groups).length)
      for (const [index, endpoint] of endpoints.entries()) {
        const requestId = `api-handlers-${index}`
        // No credentials: an admin route answers 401 before its handler runs; a public one refuses the missing body.
        const path = endpoint.path.replace(/^\/lm\/v1/, "").replace(/:\w+/g, "0")
        await app.call(endpoint.method, path, { auth: null, headers: { "x-request-id": requestId } })
        await eventually(() => expect(answered.find((request) => request.requestId === requestId)).toBeDefined())
        const report = answered.find((request) => request.requestId === requestId)!
        expect({ ...endpoint, route: report.route }).toEqual({ ...endpoint, route: `/api${endpoint.path}` })
      }
    })
  })
})
