// npm run bench: every benchmark in turn. Results go to bench/results/ (not committed).
await import('./stdio.mjs');
await import('./http.mjs');
await import('./agent.mjs');
