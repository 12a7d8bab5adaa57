// npm's `prepare` in a checkout (npm ci, npm install, npm link, npm pack): the bundle in
// dist/, the library's declarations in dist/types, and tap built for this suite's plugins
// when tap is installed (it is a devDependency: absent with --omit=dev). The packed
// package has no scripts/, and package.json's prepare then does nothing.
import { createRequire } from 'node:module';

await import('./build.mjs');
await import('./types.mjs');
let tap = false;
try {
  createRequire(import.meta.url).resolve('tap/package.json');
  tap = true;
} catch {
  // no devDependencies: nothing to build for the tests
}
if (tap) {
  // Only the test runner's preparation: a failure here must not fail the install.
  try {
    const { ensureTapBuilt } = await import('./tap-plugins.mjs');
    await ensureTapBuilt();
  } catch (err) {
    console.error(`prepare: tap was not built for this suite's plugins (${err.message}); npm test builds it`);
  }
}
