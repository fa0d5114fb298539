/**
 * Downloading an update the server offers: the artifact is streamed into a {@link DownloadTarget} (a `Blob` here,
 * a file with `fileTarget` from `@lm/client/node`), and kept only when its size and SHA-256 are the release's;
 * otherwise everything written is dropped and the download rejects with `checksum_mismatch`.
 */
import type { Release, UpdateCheckResponse } from "./api.js"
import { fromEnvelope, LmError } from "./errors.js"

/** The answer of an update check, narrowed on `update_available`. */
export type UpdateCheck =
  | (UpdateCheckResponse & {
    readonly update_available: true
    readonly release: Release
    readonly download_url: string
    readonly token_expires_at: string
  })
  | (UpdateCheckResponse & { readonly update_available: false })

/** An update check that offers an update: what `download` takes. */
export type AvailableUpdate = Extract<UpdateCheck, { readonly update_available: true }>

/** Narrows the server's answer; an offer without its release or link is not the contract's. */
export const toUpdateCheck = (answer: UpdateCheckResponse): UpdateCheck => {
  if (answer.update_available && (answer.release === null || answer.download_url === null || answer.token_expires_at === null)) {
    throw new LmError("invalid_response", 200, "an update offered without its release or download_url")
  }
  return answer as UpdateCheck
}

/**
 * Where a download goes. `write` gets the bytes in order; then either `keep` (the size and SHA-256 matched) or
 * `discard` (they did not, or the download failed), never both. `sha256` is asked for once, after the last write.
 */
export interface DownloadTarget<A> {
  write(chunk: Uint8Array): Promise<void> | void
  /** The SHA-256 (lower-case hex) of every byte written. */
  sha256(): Promise<string>
  /** Keeps the bytes; resolves with what `download` resolves with. */
  keep(): Promise<A>
  /** Drops every byte written. */
  discard(): Promise<void>
}

/** A target that collects the artifact into a `Blob` (of the release's `content_type`): for browsers. */
export const blobTarget = (contentType?: string): DownloadTarget<Blob> => {
  let chunks: Array<Uint8Array<ArrayBuffer>> = []
  const blob = () => new Blob(chunks, contentType === undefined ? {} : { type: contentType })
  return {
    write: (chunk) => void chunks.push(Uint8Array.from(chunk)),
    sha256: async () => {
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", await blob().arrayBuffer()))
      return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("")
    },
    keep: async () => blob(),
    discard: async () => void (chunks = [])
  }
}

const failedAnswer = async (response: Response): Promise<LmError> => {
  const body: unknown = await response.json().catch(() => undefined)
  return fromEnvelope(body) ?? new LmError("invalid_response", response.status, `unexpected HTTP ${response.status} for the download`)
}

/**
 * Streams the update's artifact from its `download_url` into `target` and keeps it only when its size and
 * SHA-256 are the release's. Rejects with `checksum_missing` (the release names no SHA-256: nothing is fetched),
 * `checksum_mismatch` (nothing kept), the server's refusal (`download_token_expired`, ...) or `network_error`.
 */
export const downloadUpdate = async <A>(update: AvailableUpdate, target: DownloadTarget<A>): Promise<A> => {
  if (update.update_available !== true || update.release === null || typeof update.download_url !== "string") {
    throw new LmError("invalid_options", 0, "this update check offered no update to download")
  }
  const { release } = update
  if (typeof release.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(release.sha256)) {
    throw new LmError("checksum_missing", 0, `release ${release.version} names no SHA-256 to check its download against`)
  }
  let response: Response
  try {
    response = await fetch(update.download_url)
  } catch (cause) {
    throw new LmError("network_error", 0, String(cause))
  }
  if (!response.ok || response.body === null) throw await failedAnswer(response)
  let size = 0
  const reader = response.body.getReader()
  try {
    for (;;) {
      const chunk = await reader.read().catch((cause: unknown) => {
        throw new LmError("network_error", 0, `the download broke off: ${String(cause)}`)
      })
      if (chunk.done) break
      size += chunk.value.length
      await target.write(chunk.value)
    }
  } catch (cause) {
    // A broken connection or a target that cannot write (a full disk): nothing is kept.
    await reader.cancel().catch(() => undefined)
    await target.discard()
    throw cause
  }
  const sha256 = await target.sha256()
  if (sha256 !== release.sha256 || (release.size !== null && size !== release.size)) {
    await target.discard()
    throw new LmError(
      "checksum_mismatch",
      0,
      `the download of release ${release.version} is not the release (SHA-256 ${sha256}, ${size} bytes; expected ${release.sha256}${
        release.size === null ? "" : `, ${release.size} bytes`
      }): nothing was kept`,
      { status: 0, sha256, size }
    )
  }
  return target.keep()
}
