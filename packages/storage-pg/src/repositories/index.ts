/** The domain's ports on @effect/sql-pg. */
export { layer as portsLayer } from "./licensing.js"
export { layerChangeFeed } from "./changeFeed.js"
