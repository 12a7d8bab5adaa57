// npm run bench: every benchmark in turn, then the README › Performance text they give.
// Results go to bench/results/ (not committed); `node bench/report.mjs --write` puts them in README.md.
// The agent bench ends the process when it is done, so it runs after the report (which does not read it).
await import('./stdio.mjs');
await import('./http.mjs');
await import('./client.mjs');
await import('./report.mjs');
await import('./agent.mjs');
