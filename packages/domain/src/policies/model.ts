/** The policies feature's records (CONTRACT §15): the limit of a policy's name and the events policy changes cause. */

/** The most characters of a policy's name. */
export const MAX_POLICY_NAME = 100

/** Names of the policy events of CONTRACT §15. */
export const policyEventTypes = ["policy.created", "policy.updated", "policy.deleted"] as const
export type PolicyEventType = (typeof policyEventTypes)[number]
