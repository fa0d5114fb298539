// `npm run bench` runs this file: Node 24 runs the TypeScript driver directly (type stripping); see README.md.
import "./run.ts"
