/**
 * The one error of the Promise API: the contract's error envelope (CONTRACT §1, §12) as a JavaScript `Error`,
 * plus the client's own failures (no answer, an answer that is not the contract's, a signature that does not
 * verify), each with a code of its own.
 */

/** Codes the client gives failures that did not come from the server's envelope. */
export const clientErrorCodes = [
  /** The request did not get an answer (network down, DNS, connection refused). */
  "network_error",
  /** The server answered something that is not the contract's envelope or schema. */
  "invalid_response",
  /**
   * A signed answer did not verify: not signed by a trusted key, bad signature, wrong nonce, fingerprint or license
   * key, a `server_time` that is not the signed time, or a revocation list older than the one kept (a replay).
   */
  "verification_failed",
  /** The app was set up wrongly: no trusted keys (and no `trustOnFirstUse`), a malformed key, no version to check. */
  "invalid_options",
  /** A downloaded update's size or SHA-256 is not the release's: nothing was kept. */
  "checksum_mismatch",
  /** The release names no SHA-256, so its download cannot be checked: nothing is downloaded. */
  "checksum_missing"
] as const
export type ClientErrorCode = (typeof clientErrorCodes)[number]

/** The server refused (`code` is the envelope's, `status` its HTTP status), or the client failed (status 0). */
export class LmError extends Error {
  override readonly name = "LmError"
  /** The envelope's `code` (e.g. `license_not_found`, `machine_inactive`), or a {@link ClientErrorCode}. */
  readonly code: string
  /** The HTTP status (`data.status`); 0 when no answer came. */
  readonly status: number
  /** The envelope's `data` (`status`, `params`, `retry_after`, ...). */
  readonly data: Readonly<Record<string, unknown>>
  constructor(code: string, status: number, message: string, data: Readonly<Record<string, unknown>> = { status }) {
    super(message)
    this.code = code
    this.status = status
    this.data = data
  }
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/** The error envelope's fields, when `body` is one. */
export const fromEnvelope = (body: unknown): LmError | undefined => {
  if (!isRecord(body) || body["success"] !== false) return undefined
  const { code, message, data } = body
  if (typeof code !== "string" || !isRecord(data) || typeof data["status"] !== "number") return undefined
  return new LmError(code, data["status"], typeof message === "string" ? message : code, data)
}
