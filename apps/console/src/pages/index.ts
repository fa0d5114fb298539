/**
 * The console's pages and where they live. A page is one file here and one line below: `nav` puts it in the menu,
 * `needs: "read_write"` hides it from other keys (the API refuses them anyway).
 */
import type { FunctionComponent } from "preact"
import { ApiKeys } from "./ApiKeys.js"
import { AuditLog } from "./AuditLog.js"
import { BillingEvents } from "./BillingEvents.js"
import { Dashboard } from "./Dashboard.js"
import { GeneratorDetail, Generators } from "./Generators.js"
import { Policies, PolicyDetail } from "./Policies.js"
import { LicenseDetail } from "./License.js"
import { Licenses } from "./Licenses.js"
import { MachineDetail } from "./Machine.js"
import { Releases } from "./Releases.js"
import { SubscriptionDetail, Subscriptions } from "./Subscriptions.js"
import { WebhookDetail, Webhooks } from "./Webhooks.js"

export interface PageRoute {
  /** The console path, with `:name` parameters (`/licenses/:key`). */
  readonly path: string
  readonly component: FunctionComponent<{ readonly params: Record<string, string> }>
  /** Its label in the menu, for the pages listed there. */
  readonly nav?: string
  /** The scope a key needs to see it at all. */
  readonly needs?: "read_write"
}

export const routes: ReadonlyArray<PageRoute> = [
  { path: "/", nav: "Dashboard", component: Dashboard },
  { path: "/licenses", nav: "Licenses", component: Licenses },
  { path: "/licenses/:key", component: LicenseDetail },
  { path: "/machines/:id", component: MachineDetail },
  { path: "/generators", nav: "Generators", component: Generators },
  { path: "/generators/:id", component: GeneratorDetail },
  { path: "/policies", nav: "Policies", component: Policies },
  { path: "/policies/:id", component: PolicyDetail },
  { path: "/subscriptions", nav: "Subscriptions", component: Subscriptions },
  { path: "/subscriptions/:id", component: SubscriptionDetail },
  { path: "/billing-events", nav: "Billing events", component: BillingEvents },
  { path: "/releases", nav: "Releases", component: Releases },
  { path: "/webhooks", nav: "Webhooks", component: Webhooks },
  { path: "/webhooks/:id", component: WebhookDetail },
  { path: "/api-keys", nav: "API keys", component: ApiKeys, needs: "read_write" },
  { path: "/audit-log", nav: "Audit log", component: AuditLog }
]
