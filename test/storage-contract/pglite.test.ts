/** The storage contract against embedded PGlite (always run). */
import { freshPgliteStore } from "./pg-support.js"
import { storageContract } from "./contract.js"

storageContract("pglite", freshPgliteStore)
