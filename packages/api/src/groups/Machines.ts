/**
 * The `machines` routes of the lm/v1 API (CONTRACT §6): a license's machines, one machine, deactivating it
 * (reason `admin`) and revoking it. Management routes: HTTP Basic API key, unknown body fields rejected.
 */
import { Schema } from "effect"
import { Model } from "@lm/domain/core"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "../middleware/Authentication.js"
import { Idempotency } from "../middleware/Idempotency.js"
import { NoFields } from "./Licenses.js"
import { strictPayloadOptions } from "../ParseOptions.js"
import { NotFound } from "../wire/ApiErrors.js"
import { Success } from "../wire/Envelope.js"
import { ListMeta, MachineWire, PageQuery, positiveIntFromString } from "../wire/Wire.js"

const idParam = { id: positiveIntFromString("The machine's id (a positive integer).") }

/** The machine routes. */
export class MachinesGroup extends HttpApiGroup.make("machines")
  .add(
    HttpApiEndpoint.get("listForLicense", "/licenses/:key/machines", {
      params: {
        key: Schema.String.annotate({ description: "The license key; trimmed and upper-cased before matching." })
      },
      query: {
        status: Schema.optionalKey(Model.MachineStatus.annotate({
          description: "The machine's stored status. A machine whose lease ran out or whose heartbeat died is " +
            "`active` here until the sweep deactivates it, although it holds no seat."
        })),
        ...PageQuery
      },
      success: Success(Schema.Struct({ machines: Schema.Array(MachineWire) }), ListMeta),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "List a license's machines",
      description: "Oldest first, with their components. Paging as for every list (`per_page` above 100 is read as 100)."
    })),
    HttpApiEndpoint.get("get", "/machines/:id", {
      params: idParam,
      success: Success(MachineWire),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Get a machine with its components",
      description: "The machine with its hardware `components`. Unknown id: 404 `machine_not_found`."
    })),
    HttpApiEndpoint.delete("deactivate", "/machines/:id", {
      params: idParam,
      payload: NoFields,
      success: Success(Schema.Struct({ deactivated: Schema.Literal(true), machine: MachineWire })),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Deactivate a machine (frees its seat)",
      description: "Reason `admin`. The machine record stays (status `inactive`); the client may activate again. " +
        "A machine already inactive or revoked is left as it is and answered the same way."
    })),
    HttpApiEndpoint.post("revoke", "/machines/:id/revoke", {
      params: idParam,
      payload: NoFields,
      success: Success(Schema.Struct({ revoked: Schema.Literal(true), machine: MachineWire })),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Revoke a machine",
      description: "Status `revoked`, seat freed; that fingerprint can never activate on that license again and is " +
        "listed on the CRL. Revoking works from any status; repeating it is a no-op 200."
    }))
  )
  .middleware(Idempotency)
  .middleware(Authentication)
  .annotate(HttpApi.PayloadParseOptions, strictPayloadOptions)
  .annotateMerge(OpenApi.annotations({ title: "Machines", description: "Machine management (API key required)." }))
{}
