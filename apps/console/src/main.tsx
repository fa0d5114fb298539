/** The console's entry: its styles and the app, rendered into `#app`. */
import { render } from "preact"
import { App } from "./App.js"
import "./styles.css"

render(<App />, document.getElementById("app")!)
