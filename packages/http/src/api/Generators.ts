/** The `generators` routes of the lm/v1 API (placeholder: routes are added by the engineer who owns this group). */
import { HttpApiGroup } from "effect/http-api"

export class GeneratorsGroup extends HttpApiGroup.make("generators") {}
