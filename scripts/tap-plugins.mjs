/*
 * Builds tap's test class with the plugins package.json asks for, when it was
 * built with others (as it is straight after `npm ci`). `npm test` runs this first.
 *
 *   signature in node_modules/@tapjs/test/test-built ─► same as the config's? done
 *                                                   ─► differs? `tap build`
 *
 * Why: the suite turns off the plugins it does not use (TypeScript through ts-node,
 * module mocks, snapshots, fixtures...). Each adds imports or a module-hook chain to
 * every test process, about half a CPU-second per file. tap rebuilds by itself when
 * the lists differ, but only after it has chosen the test processes' flags, so the
 * first run after an install would still pay for them.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TapConfig } from '@tapjs/config';

const built = readFileSync(fileURLToPath(import.meta.resolve('@tapjs/test/test-built')), 'utf8').match(/export const signature = `([^`]*)`/)?.[1];
const config = await TapConfig.load();
if (built !== config.pluginSignature) {
  const tapPkg = createRequire(import.meta.url).resolve('tap/package.json');
  const bin = join(dirname(tapPkg), JSON.parse(readFileSync(tapPkg, 'utf8')).bin.tap);
  const r = spawnSync(process.execPath, [bin, 'build'], { stdio: 'inherit' });
  process.exitCode = r.status ?? 1;
}
