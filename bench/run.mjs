// npm run bench: every benchmark in turn, then the docs/performance.md text they give.
// Results go to bench/results/ (not committed); `node bench/report.mjs --write` puts them in the generated blocks of docs/performance.md.
await import('./stdio.mjs');
await import('./http.mjs');
await import('./client.mjs');
await import('./spawn.mjs');
await import('./net-bridge.mjs');
await import('./changes.mjs');
await import('./agent.mjs');
await import('./stream.mjs');
await import('./console.mjs');
await import('./report.mjs');
// The agent bench's engines leave handles behind; the run is over.
process.exit(0);
