/** The storage contract against the memory store. */
import { MemoryStore } from "@lm/storage-memory"
import { storageContract } from "./contract.js"

storageContract("memory", () => MemoryStore.layer)
