/** The domain's ports on @effect/sql-pg and the licensing schema they use. */
export { createLicensingSchema } from "./schema.js"
export { layer as portsLayer } from "./licensing.js"
export { layerChangeFeed } from "./changeFeed.js"
