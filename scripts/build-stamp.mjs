// Whether dist/ already holds what scripts/build.mjs would write, so that a build can be skipped.
//
//   after a build: stamp = { key: sha256 of every input, inputs, outputs: sha256 of every file in dist/ }
//                  ─► node_modules/.cache/shadowcode-build/stamp.json (never shipped)
//   before a build: the stamp's inputs hash to its key again, and dist/ holds exactly its outputs,
//                   byte for byte? ─► current: nothing to do
//
// The inputs are every file esbuild read (its metafile: our sources, gen/, the bundled packages),
// plus what the build reads on its own (policy/, the console page's static files, package.json),
// tsconfig.json (esbuild follows some of its options), the lockfile, this script and build.mjs, the esbuild and Node versions, and the names of every
// file under src/ (a new file can change how an import resolves without changing any input).
// dist/types is not the build's (scripts/types.mjs writes it) and is left out of the outputs.
// Any doubt (no stamp, a missing or unreadable file, another esbuild) means: build.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const CHECKOUT = fileURLToPath(new URL('..', import.meta.url));
const stampFile = (root) => join(root, 'node_modules', '.cache', 'shadowcode-build', 'stamp.json');
const ALWAYS = ['package.json', 'package-lock.json', 'tsconfig.json', 'scripts/build.mjs', 'scripts/build-stamp.mjs'];

/** Every file below `dir` (relative to the checkout, sorted), skipping `skip` (relative names of folders). */
function files(root, dir, skip = []) {
  const out = [];
  const walk = (rel) => {
    let entries;
    try {
      entries = readdirSync(join(root, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (!skip.includes(path)) walk(path);
      } else out.push(path);
    }
  };
  walk(dir);
  return out.sort();
}

const sha = (bytes) => createHash('sha256').update(bytes).digest('hex');

function key(root, inputs) {
  const esbuildVersion = JSON.parse(readFileSync(createRequire(import.meta.url).resolve('esbuild/package.json'), 'utf8')).version;
  const hash = createHash('sha256').update(`esbuild ${esbuildVersion}\0node ${process.version}\0`);
  hash.update(`src:${files(root, 'src').join('\n')}\0`);
  const all = new Set([...ALWAYS, ...files(root, 'policy'), ...files(root, 'gen'), ...files(root, 'src/console/page'), ...inputs]);
  for (const rel of [...all].sort()) {
    hash.update(`${rel}\0`);
    // esbuild names a few inputs that are not files ("<define:…>", "(disabled):…"): their names are their content.
    if (/^[<(]/.test(rel)) continue;
    hash.update(readFileSync(join(root, rel))).update('\0');
  }
  return hash.digest('hex');
}

function outputs(root) {
  const found = {};
  for (const rel of files(root, 'dist', ['dist/types'])) found[rel] = sha(readFileSync(join(root, rel)));
  return found;
}

/** True when dist/ holds what a build would write now. */
export function isCurrent(root = CHECKOUT) {
  try {
    const stamp = JSON.parse(readFileSync(stampFile(root), 'utf8'));
    if (stamp.root !== root || key(root, stamp.inputs) !== stamp.key) return false;
    const now = outputs(root);
    const names = Object.keys(stamp.outputs);
    return names.length > 0 && names.length === Object.keys(now).length && names.every((n) => now[n] === stamp.outputs[n]);
  } catch {
    return false;
  }
}

/** Before a build: a build that fails halfway leaves no stamp behind. */
export function clearStamp(root = CHECKOUT) {
  rmSync(stampFile(root), { force: true });
}

/** After a build, with the inputs esbuild reported (relative to the checkout, as the build ran from it). */
export function writeStamp(inputs, root = CHECKOUT) {
  const rel = [...new Set(inputs.map((p) => relative(root, join(root, p)).split(sep).join('/')))].sort();
  const stamp = { root, key: key(root, rel), inputs: rel, outputs: outputs(root) };
  const file = stampFile(root);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(`${file}.tmp`, JSON.stringify(stamp));
  renameSync(`${file}.tmp`, file);
}
