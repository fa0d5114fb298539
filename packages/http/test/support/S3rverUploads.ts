/**
 * s3rver (3.7) keeps multipart uploads but does not answer ListMultipartUploads or AbortMultipartUpload ("not
 * implemented" / "method not allowed"). The S3 artifact store needs both (a failed upload is aborted; the leftovers
 * of a crash are listed and aborted at start), so the tests add them in front of s3rver's routes, on its own
 * files: `{directory}/{bucket}/._S3rver_uploads/{uploadId}/key` per upload, its time of writing the upload's
 * `Initiated`. Answers follow the S3 API reference (one page: `IsTruncated` false).
 */
import { promises as fs } from "node:fs"
import * as path from "node:path"
import type S3rver from "s3rver"

const xml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** Adds ListMultipartUploads and AbortMultipartUpload to `s3`, which keeps its files in `directory`; call before `run()`. */
export const withMultipartUploadListing = (s3: S3rver, directory: string): void => {
  const uploadsOf = (bucket: string) => path.join(directory, bucket, "._S3rver_uploads")
  const middleware = (s3 as unknown as { middleware: Array<unknown> }).middleware
  middleware.unshift(async (ctx: any, next: () => Promise<void>) => {
    const [bucket = "", ...rest] = decodeURIComponent(ctx.path).replace(/^\//, "").split("/")
    const key = rest.join("/")
    if (ctx.method === "GET" && key === "" && "uploads" in ctx.query) {
      const prefix = String(ctx.query.prefix ?? "")
      const ids = await fs.readdir(uploadsOf(bucket)).catch(() => [] as Array<string>)
      const uploads: Array<string> = []
      for (const id of ids.sort()) {
        const file = path.join(uploadsOf(bucket), id, "key")
        const [uploadKey, stat] = await Promise.all([fs.readFile(file, "utf8"), fs.stat(file)]).catch(() => [undefined, undefined])
        if (uploadKey === undefined || stat === undefined || !uploadKey.startsWith(prefix)) continue
        uploads.push(
          `<Upload><Key>${xml(uploadKey)}</Key><UploadId>${xml(id)}</UploadId>` +
            `<Initiated>${stat.mtime.toISOString()}</Initiated><StorageClass>STANDARD</StorageClass></Upload>`
        )
      }
      ctx.type = "application/xml"
      ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
        `<Bucket>${xml(bucket)}</Bucket><Prefix>${xml(prefix)}</Prefix><MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>` +
        `${uploads.join("")}</ListMultipartUploadsResult>`
      return
    }
    if (ctx.method === "DELETE" && key !== "" && typeof ctx.query.uploadId === "string") {
      const dir = path.join(uploadsOf(bucket), path.basename(ctx.query.uploadId))
      const known = await fs.readFile(path.join(dir, "key"), "utf8").catch(() => undefined)
      if (known !== key) {
        ctx.status = 404
        ctx.type = "application/xml"
        ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>`
        return
      }
      await fs.rm(dir, { recursive: true, force: true })
      ctx.status = 204
      return
    }
    await next()
  })
}
