/**
 * The domain's `IdempotencyRepository` in memory: the records on a map by API key and idempotency key. Each
 * operation is one synchronous step, so a claim is atomic. Outside the tables' transactions: a claim is never
 * part of a change's transaction (its request runs after it).
 */
import type { Model } from "@lm/domain"
import { Ports } from "@lm/domain"
import { Effect } from "effect"

const slot = (apiKeyId: number, key: string) => `${apiKeyId}\u0000${key}`

export const make = (): Ports.IdempotencyRepository["Service"] => {
  const records = new Map<string, Model.IdempotencyRecord>()
  const running = (apiKeyId: number, key: string, requestHash: string) => {
    const record = records.get(slot(apiKeyId, key))
    return record !== undefined && record.answer === null && record.requestHash === requestHash ? record : undefined
  }
  return Ports.IdempotencyRepository.of({
    claim: (claim, now) =>
      Effect.sync(() => {
        const at = slot(claim.apiKeyId, claim.key)
        const holder = records.get(at)
        if (holder !== undefined && holder.expiresAt > now) return holder
        const { apiKeyId, key, requestHash, runningUntil } = claim
        records.set(at, { apiKeyId, key, requestHash, answer: null, expiresAt: runningUntil })
        return undefined
      }),
    complete: (apiKeyId, key, requestHash, answer, expiresAt) =>
      Effect.sync(() => {
        const record = running(apiKeyId, key, requestHash)
        if (record !== undefined) records.set(slot(apiKeyId, key), { ...record, answer: { ...answer }, expiresAt })
      }),
    release: (apiKeyId, key, requestHash) =>
      Effect.sync(() => {
        if (running(apiKeyId, key, requestHash) !== undefined) records.delete(slot(apiKeyId, key))
      }),
    prune: (now) =>
      Effect.sync(() => {
        let pruned = 0
        for (const [at, record] of records) {
          if (record.expiresAt <= now) {
            records.delete(at)
            pruned++
          }
        }
        return pruned
      })
  })
}
