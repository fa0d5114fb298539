/** A console path that names no page. */
import { Link } from "../router.js"
import { Page } from "../ui.js"

export const NotFound = () => (
  <Page title="Not found">
    <p>The console has no page here. <Link href="/">Go to the dashboard</Link>.</p>
  </Page>
)
