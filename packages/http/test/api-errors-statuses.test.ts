/**
 * The HTTP status of an error is written once: domain errors carry it, `ApiErrors.fromDomain` picks the envelope
 * class by it, and each envelope class states it once (response status and `data.status`). These checks keep the
 * pieces in step: a domain status without an envelope class would silently become a 500.
 */
import { Schema } from "effect"
import { Errors } from "@lm/domain"
import { describe, expect, expectTypeOf, it } from "vitest"
import { ApiErrors } from "@lm/api"

describe("error statuses", () => {
  it("every status a domain error carries has an envelope class (checked by the type checker)", () => {
    expectTypeOf<Errors.DomainError["status"]>().toExtend<ApiErrors.Status>()
  })

  it("each entry of byStatus is the class of that status: it accepts data.status of its key and no other", () => {
    const statuses = Object.keys(ApiErrors.byStatus).map(Number) as Array<ApiErrors.Status>
    for (const status of statuses) {
      const envelope = (s: number) => ({ success: false, code: "some_code", message: "m", data: { status: s } })
      const is = Schema.is(ApiErrors.byStatus[status])
      const decode = Schema.decodeUnknownExit(ApiErrors.byStatus[status] as unknown as Schema.Codec<unknown, unknown>)
      expect(decode(envelope(status))._tag, `${status}`).toBe("Success")
      expect(decode(envelope(status === 400 ? 401 : 400))._tag, `${status}`).toBe("Failure")
      expect(is(ApiErrors.make(status, "some_code", "m")), `${status}`).toBe(true)
      expect(ApiErrors.make(status, "some_code", "m").data.status).toBe(status)
    }
  })
})
