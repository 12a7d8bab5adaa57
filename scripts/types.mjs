// Emits the library's type declarations into dist/types.
//
//   key = sha256(typescript's version, tsconfig*.json, this script, every file under src/)
//   node_modules/.cache/shadowcode-types/KEY holds them? copy that ─► done
//   else tsc -p tsconfig.types.json ─► a scratch directory (declarations of every file the library reaches)
//   ─► keep only what src/lib/index.d.ts refers to, following relative imports
//   ─► refuse an import of another package: the published types must compile with nothing
//      installed beside them but @types/node (the bundled packages are not installed)
//   ─► copy into the output and into the cache
//
//   node scripts/types.mjs [--out DIR]    (default: dist/types of this checkout)
//
// tsconfig.types.json sets noCheck: the declarations are the same either way, and the sources are
// type-checked by `npm run typecheck`; a second full check here only doubled the time.
//
// Why a cache: `npm ci` emits the declarations (prepare), and the packaging tests emit them again
// into the package they install, about 5 CPU-seconds each time for the same output. The key covers
// every input, so an entry is never stale; a new one replaces the others.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const at = process.argv.indexOf('--out');
const out = at > 0 && process.argv[at + 1] ? resolve(process.argv[at + 1]) : join(root, 'dist', 'types');
const CACHE = join(root, 'node_modules', '.cache', 'shadowcode-types');

function inputsKey() {
  const tsVersion = JSON.parse(readFileSync(createRequire(import.meta.url).resolve('typescript/package.json'), 'utf8')).version;
  const hash = createHash('sha256').update(`${tsVersion}\0`);
  const add = (rel) => hash.update(`${rel}\0`).update(readFileSync(join(root, rel))).update('\0');
  for (const rel of ['tsconfig.json', 'tsconfig.types.json', 'scripts/types.mjs']) add(rel);
  const walk = (rel) => {
    for (const e of readdirSync(join(root, rel), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = join(rel, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.isFile()) add(path);
    }
  };
  walk('src');
  return hash.digest('hex').slice(0, 24);
}

/** The declarations into `dir`, emitted by tsc; returns how many files. */
function emit(dir) {
  const scratch = mkdtempSync(join(tmpdir(), 'sc-types-'));
  try {
    execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.types.json'), '--outDir', scratch], { stdio: 'inherit' });
    const entry = join(scratch, 'src', 'lib', 'index.d.ts');
    const keep = new Set();
    const todo = [entry];
    while (todo.length) {
      const file = todo.pop();
      if (keep.has(file)) continue;
      keep.add(file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)) {
        const spec = m[1];
        if (spec.startsWith('node:')) continue;
        if (!spec.startsWith('.')) throw new Error(`${relative(scratch, file)} imports ${spec}: the library's public types must not reach another package`);
        const target = resolve(dirname(file), spec.replace(/\.js$/, '.d.ts'));
        if (!existsSync(target)) throw new Error(`${relative(scratch, file)} imports ${spec}, which has no declaration`);
        todo.push(target);
      }
    }
    for (const file of keep) {
      const to = join(dir, relative(scratch, file));
      mkdirSync(dirname(to), { recursive: true });
      cpSync(file, to);
    }
    return keep.size;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const key = inputsKey();
const cached = join(CACHE, key);
rmSync(out, { recursive: true, force: true });
if (existsSync(cached)) {
  cpSync(cached, out, { recursive: true });
} else {
  // Into a temp folder first: the cache never holds a half-written entry, nor does the output.
  mkdirSync(CACHE, { recursive: true });
  const fresh = mkdtempSync(join(CACHE, `.${key}-`));
  try {
    emit(fresh);
    try {
      renameSync(fresh, cached);
    } catch {
      // Another process stored the same key first: its files are the same.
    }
    for (const name of readdirSync(CACHE)) {
      // Other keys go; so do the temp folders of emits that died (an hour is far longer than one takes).
      const stale = name.startsWith('.') ? Date.now() - statSync(join(CACHE, name)).mtimeMs > 3600_000 : name !== key;
      if (stale) rmSync(join(CACHE, name), { recursive: true, force: true });
    }
    cpSync(existsSync(cached) ? cached : fresh, out, { recursive: true });
  } finally {
    rmSync(fresh, { recursive: true, force: true });
  }
}
let count = 0;
const countFiles = (d) => {
  for (const e of readdirSync(d, { withFileTypes: true })) e.isDirectory() ? countFiles(join(d, e.name)) : count++;
};
countFiles(out);
console.log(`dist/types: ${count} declaration files`);
