// tap's test class is generated for a list of plugins. package.json's tap config turns off
// the ones this suite does not use, and the tap that `npm ci` installs is built for tap's
// default list, so it has to be built again once: `tap build`, some 7 s and 10 CPU-seconds
// on 2 cores. tap would rebuild by itself, but only after it has chosen the first run's
// flags, so that run would still pay for every plugin.
//
//   installed build's signature == the config's? ─► nothing
//   else ─► tap build ─► true
//
// Called by `prepare` (scripts/prepare.mjs, so that `npm ci` in a checkout leaves tap
// built and the first `npm test` does not pay for it) and by scripts/test-setup.mjs (for a
// plugin list changed since).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Builds tap for package.json's plugin list unless it already is; throws if `tap build` fails. */
export async function ensureTapBuilt() {
  const { TapConfig } = await import('@tapjs/config');
  const built = readFileSync(fileURLToPath(import.meta.resolve('@tapjs/test/test-built')), 'utf8').match(/export const signature = `([^`]*)`/)?.[1];
  const config = await TapConfig.load();
  if (built === config.pluginSignature) return false;
  const tapPkg = createRequire(import.meta.url).resolve('tap/package.json');
  const bin = join(dirname(tapPkg), JSON.parse(readFileSync(tapPkg, 'utf8')).bin.tap);
  const r = spawnSync(process.execPath, [bin, 'build'], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`tap build failed (${r.error?.message ?? `exit ${r.status}`})`);
  return true;
}
