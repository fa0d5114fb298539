// `npm run bench` runs this file: Node 24 runs the TypeScript drivers directly (type stripping); see README.md.
// `npm run bench -- --quick` runs the quick bench of issue 32 (wrk, paired with the floor) instead of the full run.
await import(process.argv.includes("--quick") ? "./quick.ts" : "./run.ts")
