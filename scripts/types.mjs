// Emits the library's type declarations into dist/types.
//
//   tsc -p tsconfig.types.json ─► a scratch directory (declarations of every file the library reaches)
//   ─► keep only what src/lib/index.d.ts refers to, following relative imports
//   ─► refuse an import of another package: the published types must compile with nothing
//      installed beside them but @types/node (the bundled packages are not installed)
//
//   node scripts/types.mjs [--out DIR]    (default: dist/types of this checkout)
//
// tsconfig.types.json sets noCheck: the declarations are the same either way, and the sources are
// type-checked by `npm run typecheck`; a second full check here only doubled the time.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
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
  const at = process.argv.indexOf('--out');
  const out = at > 0 && process.argv[at + 1] ? resolve(process.argv[at + 1]) : join(root, 'dist', 'types');
  rmSync(out, { recursive: true, force: true });
  for (const file of keep) {
    const to = join(out, relative(scratch, file));
    mkdirSync(dirname(to), { recursive: true });
    cpSync(file, to);
  }
  console.log(`dist/types: ${keep.size} declaration files`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
