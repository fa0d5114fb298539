/**
 * @lm/storage-pg: the store on PostgreSQL (a server, or embedded PGlite) through @effect/sql-pg.
 */
export * as Migrations from "./Migrations.js"
export * as PgliteBridge from "./PgliteBridge.js"
export * as PgliteSession from "./PgliteSession.js"
export { layerPglite, layerPostgres, makePglite, type PgliteOptions, pgliteThreads, type PostgresOptions, StoreUnavailable, storeUnavailable } from "./PgStore.js"
export * as PgliteTemplate from "./PgliteTemplate.js"
export { defaultPgliteMaintenanceEvery, layerOnClient, layerPgliteMaintenance, layerPgliteStore, layerPostgresStore, maintainPglite } from "./LicensingStore.js"
export { default as createLicensingSchema } from "./migrations/0002_licensing_schema.js"
export { EventLogRowsPerInsert, layerSharedRateLimits, portsLayer } from "./repositories/index.js"
