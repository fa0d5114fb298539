/** The storage contract against embedded PGlite (always run): one PGlite for the file, reset before each case. */
import { reusedPgliteStores } from "./pg-support.js"
import { storageContract } from "./contract.js"

storageContract("pglite", reusedPgliteStores())
