// A licensed "desktop app" on @lm/client: activates this machine, validates online, beats while it runs, checks
// its entitlement offline, and frees its seat on Ctrl-C. Run from the project folder after `npm run build`, against a
// running server (`npx node` is the project's Node.js, which runs TypeScript):
//   LM_URL=http://127.0.0.1:8080 LM_TRUSTED_KEYS=<public_key,...> LM_PRODUCT_ID=1 LM_LICENSE_KEY=... npx node examples/licensed-app.ts
// LM_TRUSTED_KEYS: the `public_key` values of GET /api/lm/v1/public-key, comma-separated.
import { homedir } from "node:os"
import { join } from "node:path"
import { createLicensedApp, LmError } from "@lm/client"
import { fileStorage, machineFingerprint } from "@lm/client/node"

// The vendor's public keys (the `public_key` values of GET /public-key), bundled into a real app when it is built,
// with the next key before a rotation; read from the environment here so that the example runs against any server.
const trustedKeys = (process.env.LM_TRUSTED_KEYS ?? "").split(",").filter((key) => key !== "")
// The app's product: a license of another product does not entitle it.
const productId = Number(process.env.LM_PRODUCT_ID ?? "1")

const app = createLicensedApp({
  baseUrl: process.env.LM_URL ?? "http://127.0.0.1:8080",
  trustedKeys,
  productId,
  licenseKey: process.env.LM_LICENSE_KEY ?? "",
  fingerprint: await machineFingerprint({ productId }),
  storage: fileStorage(process.env.LM_STATE_FILE ?? join(homedir(), ".example-app", "license.json")),
  device: { name: "example-app", platform: process.platform, app_version: "1.0.0" }
})

try {
  const machine = await app.activate()
  console.log(`activated machine ${machine.id}`)
  const validation = await app.validate()
  console.log(`validated: ${validation.code}`)
} catch (error) {
  // Offline (or refused): the proof kept from the last run decides.
  console.log(`online check failed: ${error instanceof LmError ? error.code : String(error)}`)
}

const entitlement = await app.entitlement()
if (!entitlement.entitled) {
  console.log(`not entitled: ${entitlement.reason}`)
  process.exit(1)
}
console.log(`entitled offline until ${new Date(entitlement.offlineUntil * 1000).toISOString()}`)

const heartbeat = app.startHeartbeat({
  onBeat: () => console.log("heartbeat ok"),
  onStop: (stop) => {
    if (stop.reason === "refused") {
      console.log(`license stopped: ${stop.code}`)
      process.exit(1)
    }
  }
})

process.once("SIGINT", async () => {
  heartbeat.stop()
  await app.shutdown()
  console.log("deactivated")
  process.exit(0)
})
