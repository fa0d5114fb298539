/** The billing feature's errors (CONTRACT §20, §12). */
import { Schema } from "effect"

/** A provider event whose signature is missing, wrong or too old: nothing changes (400). */
export class BillingSignatureInvalid extends Schema.TaggedError<BillingSignatureInvalid>()("BillingSignatureInvalid", {
  message: Schema.String
}) {
  readonly code = "billing_signature_invalid"
  readonly status = 400
}
export const billingSignatureInvalid = (why: string) =>
  new BillingSignatureInvalid({ message: `The billing provider's signature does not verify: ${why}.` })
