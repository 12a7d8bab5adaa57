// Copies the licence text of every package shadowcode ships: every runtime
// dependency (every non-dev package in package-lock.json) and every package
// bundled into dist/ (scripts/bundled-packages.mjs), into licenses/<name>@<version>/ and writes
// licenses/manifest.json with each file's SHA-256. test/licenses.test.ts
// recomputes the digests and fails on drift or on a dependency missing here.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundledPackages } from './bundled-packages.mjs';

const root = new URL('..', import.meta.url).pathname;
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
const outDir = join(root, 'licenses');
rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir);
const packages = [];
const shipped = new Map();
for (const [path, meta] of Object.entries(lock.packages)) {
  if (!path || meta.dev) continue;
  shipped.set(`${path.replace(/^.*node_modules\//, '')}@${meta.version}`, { name: path.replace(/^.*node_modules\//, ''), version: meta.version, license: meta.license ?? null, path });
}
for (const b of await bundledPackages()) shipped.set(`${b.name}@${b.version}`, { name: b.name, version: b.version, license: b.license, path: b.dir });
for (const meta of shipped.values()) {
  const { name, path } = meta;
  const dir = join(root, path);
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => /^(licen[cs]e|copying|notice)/i.test(f)).sort() : [];
  const entry = { name, version: meta.version, license: meta.license ?? null, files: [] };
  for (const f of files) {
    const dest = join(`${name.replace('/', '__')}@${meta.version}`, f);
    mkdirSync(join(outDir, `${name.replace('/', '__')}@${meta.version}`), { recursive: true });
    copyFileSync(join(dir, f), join(outDir, dest));
    entry.files.push({ path: dest, sha256: createHash('sha256').update(readFileSync(join(dir, f))).digest('hex') });
  }
  packages.push(entry);
}
packages.sort((a, b) => a.name.localeCompare(b.name));
writeFileSync(join(outDir, 'manifest.json'), `${JSON.stringify({ packages }, null, 2)}\n`);
console.error(`licenses: ${packages.length} runtime packages, ${packages.filter((p) => !p.files.length).map((p) => p.name).join(', ') || 'all'} ${packages.some((p) => !p.files.length) ? 'ship no licence file' : 'ship licence files'}`);
