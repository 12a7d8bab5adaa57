/*
 * scripts/build-stamp.mjs decides whether `npm run build` may skip writing dist/. A wrong
 * "current" would test and ship a stale bundle, so every kind of change must count as one.
 * The checks run on a small stand-in checkout (the stamp's logic does not depend on what esbuild
 * builds); the real build writes and reads the same stamp on every `npm test`.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import * as stamp from '../../scripts/build-stamp.mjs';
import { ROOT } from '../fixtures/env.js';

function checkout(): string {
  const root = mkdtempSync(join(tmpdir(), 'sc-stamp-'));
  const put = (rel: string, text: string) => {
    mkdirSync(join(root, rel, '..'), { recursive: true });
    writeFileSync(join(root, rel), text);
  };
  put('package.json', '{"name":"x","version":"1.0.0"}');
  put('package-lock.json', '{}');
  put('tsconfig.json', '{}');
  put('scripts/build.mjs', '// build\n');
  put('scripts/build-stamp.mjs', '// stamp\n');
  put('src/cli/main.ts', 'export const a = 1;\n');
  put('src/console/page/style.css', 'body {}\n');
  put('policy/actions.json', '{}\n');
  put('gen/validators/index.js', 'export {};\n');
  put('node_modules/dep/index.js', 'module.exports = 1;\n');
  put('dist/cli.cjs', 'built\n');
  put('dist/types/index.d.ts', 'export {};\n');
  return root;
}

function built(): string {
  const root = checkout();
  stamp.writeStamp(['src/cli/main.ts', 'node_modules/dep/index.js', '<define:__X__>'], root);
  return root;
}

t.test('a checkout that was never built, or whose stamp was cleared, is not current', async (t) => {
  const root = checkout();
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  t.notOk(stamp.isCurrent(root), 'no stamp');
  stamp.writeStamp(['src/cli/main.ts'], root);
  t.ok(stamp.isCurrent(root), 'stamped right after a build');
  stamp.clearStamp(root);
  t.notOk(stamp.isCurrent(root), 'a build that started and failed leaves no stamp');
});

const changes: Array<[string, (root: string) => void]> = [
  ['an edited source that esbuild read', (root) => appendFileSync(join(root, 'src/cli/main.ts'), '// edited\n')],
  ['an edited file of a bundled package', (root) => appendFileSync(join(root, 'node_modules/dep/index.js'), '// patched\n')],
  ['a new file under src/ (it can change how an import resolves)', (root) => writeFileSync(join(root, 'src/cli/main.tsx'), '')],
  ['an edited policy file (the build checks them)', (root) => writeFileSync(join(root, 'policy/actions.json'), '{"a":1}\n')],
  ['a new policy file', (root) => writeFileSync(join(root, 'policy/extra.json'), '{}\n')],
  ['an edited generated validator', (root) => appendFileSync(join(root, 'gen/validators/index.js'), '//\n')],
  ['an edited static file of the console page', (root) => writeFileSync(join(root, 'src/console/page/style.css'), 'p {}\n')],
  ['a new version in package.json (it is built in)', (root) => writeFileSync(join(root, 'package.json'), '{"name":"x","version":"1.0.1"}')],
  ['an edited tsconfig.json (esbuild reads some of its options)', (root) => writeFileSync(join(root, 'tsconfig.json'), '{"compilerOptions":{}}')],
  ['an edited lockfile', (root) => writeFileSync(join(root, 'package-lock.json'), '{"lockfileVersion":3}')],
  ['an edited build script', (root) => appendFileSync(join(root, 'scripts/build.mjs'), '//\n')],
  ['an input that is gone', (root) => rmSync(join(root, 'node_modules/dep/index.js'))],
  ['an output edited in dist/', (root) => appendFileSync(join(root, 'dist/cli.cjs'), 'x')],
  ['an output removed from dist/', (root) => rmSync(join(root, 'dist/cli.cjs'))],
  ['an extra file in dist/', (root) => writeFileSync(join(root, 'dist/old.cjs'), '')],
  ['dist/ removed', (root) => rmSync(join(root, 'dist'), { recursive: true })],
];

for (const [what, change] of changes) {
  t.test(`${what} makes dist/ stale`, async (t) => {
    const root = built();
    t.teardown(() => rmSync(root, { recursive: true, force: true }));
    t.ok(stamp.isCurrent(root), 'current before the change');
    change(root);
    t.notOk(stamp.isCurrent(root), 'stale after it');
  });
}

t.test('what the build does not own or read leaves dist/ current', async (t) => {
  const root = built();
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  writeFileSync(join(root, 'dist/types/index.d.ts'), 'export declare const b: 1;\n');
  writeFileSync(join(root, 'README.md'), 'docs\n');
  mkdirSync(join(root, 'test'));
  writeFileSync(join(root, 'test/x.test.ts'), '');
  t.ok(stamp.isCurrent(root), 'declarations (scripts/types.mjs writes them), docs and tests are not build inputs');
});

t.test('a stamp copied from another checkout does not count', async (t) => {
  const a = built();
  const b = checkout();
  t.teardown(() => {
    rmSync(a, { recursive: true, force: true });
    rmSync(b, { recursive: true, force: true });
  });
  mkdirSync(join(b, 'node_modules/.cache/shadowcode-build'), { recursive: true });
  writeFileSync(join(b, 'node_modules/.cache/shadowcode-build/stamp.json'), readFileSync(join(a, 'node_modules/.cache/shadowcode-build/stamp.json')));
  t.notOk(stamp.isCurrent(b), 'the stamp names the checkout it was made in');
});

t.test('a stamp that is not JSON means build', async (t) => {
  const root = built();
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  writeFileSync(join(root, 'node_modules/.cache/shadowcode-build/stamp.json'), '{"key":');
  t.notOk(stamp.isCurrent(root));
});


t.test("this checkout's build recorded what esbuild read, and dist/ is current", async (t) => {
  // npm test builds (or finds dist/ current) before tap starts, so the stamp is there.
  const recorded = JSON.parse(readFileSync(join(ROOT, 'node_modules/.cache/shadowcode-build/stamp.json'), 'utf8')) as { inputs: string[]; outputs: Record<string, string> };
  for (const input of ['src/cli/main.ts', 'src/engine/spawn/supervisor.ts', 'src/console/page/app.ts', 'src/boot.ts']) t.ok(recorded.inputs.includes(input), `${input} is an input`);
  t.ok(recorded.inputs.some((i) => i.startsWith('node_modules/@modelcontextprotocol/server/')), 'the bundled SDK is an input');
  t.ok(recorded.inputs.some((i) => i.startsWith('node_modules/@opentelemetry/otlp-transformer/')), 'the bundled OpenTelemetry packages are inputs');
  t.same(Object.keys(recorded.outputs).filter((o) => o.endsWith('.cjs')).sort(), ['dist/boot.cjs', 'dist/cli.cjs', 'dist/lib.cjs', 'dist/net-bridge.cjs', 'dist/otel.cjs', 'dist/sqlite-child.cjs', 'dist/supervisor.cjs', 'dist/vendor.cjs']);
  t.ok(stamp.isCurrent(ROOT), 'dist/ is what the build wrote');
});

t.test('a build skipped for a current dist/ lets its importer go on (prepare emits the declarations next)', async (t) => {
  // prepare.mjs imports build.mjs, then types.mjs: a skip that ended the process would leave a
  // packed or linked checkout without its declarations. dist/ is current during the run (above).
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', "await import('./scripts/build.mjs'); console.log('importer goes on')"], { cwd: ROOT, encoding: 'utf8' });
  t.match(out, /dist\/ is up to date/);
  t.match(out, /importer goes on/);
});
