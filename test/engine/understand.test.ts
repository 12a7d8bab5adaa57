import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { isIgnored, parseGitignore } from '../../src/engine/gitignore.js';
import { understand } from '../../src/engine/understand.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { cli, connection, sandbox } from '../fixtures/env.js';

const FILES = shippedPolicy().limits.files;

function tree(root: string, files: Record<string, string>): void {
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(join(root, p, '..'), { recursive: true });
    writeFileSync(join(root, p), text);
  }
}

t.test('maps languages, manifests, entry points and test commands, honouring .gitignore', async (t) => {
  const sb = sandbox();
  tree(sb.project, {
    'package.json': JSON.stringify({ main: './dist/index.js', scripts: { test: 'tap' } }),
    '.gitignore': 'dist/\n*.log\n!keep.log\n/build\n',
    'src/index.ts': '', 'src/util.ts': '', 'src/cli/main.ts': '',
    'dist/index.js': '', 'debug.log': '', 'keep.log': '', 'build/out.js': '', 'lib/build/in.js': '',
    'Makefile': 'test:\n\tnpm test\n',
    'vendor/.gitignore': '*.py\n', 'vendor/a.py': '', 'vendor/b.rs': '',
  });
  mkdirSync(join(sb.root, 'elsewhere'));
  writeFileSync(join(sb.root, 'elsewhere', 'x.go'), '');
  symlinkSync(join(sb.root, 'elsewhere'), join(sb.project, 'linked'));
  const m = understand(sb.project, { understand_files: 1000, understand_depth: 12, understand_bytes: 262144 }, FILES);
  t.same(m.languages, [
    { language: 'TypeScript', files: 3 },
    { language: 'JavaScript', files: 1 },
    { language: 'JSON', files: 1 },
    { language: 'Rust', files: 1 },
  ], 'dist/, build/ at the root, *.log and vendor/*.py are ignored; links are not followed');
  t.same(m.manifests.sort(), ['Makefile', 'package.json']);
  t.ok(m.entry_points.includes('dist/index.js') && m.entry_points.includes('src/index.ts'));
  t.same(m.test_commands.map((c) => c.argv.join(' ')), ['npm test', 'make test']);
  t.notOk(m.top_level.includes('dist/'));
  t.ok(m.top_level.includes('keep.log'), 'negation re-includes');
});

t.test('the walk stops at the file limit and says so', async (t) => {
  const sb = sandbox();
  for (let i = 0; i < 30; i++) writeFileSync(join(sb.project, `f${i}.py`), '');
  const m = understand(sb.project, { understand_files: 10, understand_depth: 12, understand_bytes: 262144 }, FILES);
  t.equal(m.truncated, true);
  t.equal(m.files_scanned, 10);
  t.match(m.truncated_reason, /stopped after 10 files/);
});

t.test('the map stays within its byte budget', async (t) => {
  const sb = sandbox();
  for (let i = 0; i < 300; i++) writeFileSync(join(sb.project, `a-rather-long-file-name-number-${i}.md`), '');
  const m = understand(sb.project, { understand_files: 1000, understand_depth: 12, understand_bytes: 4096 }, FILES);
  t.ok(Buffer.byteLength(JSON.stringify(m)) <= 4096);
  t.equal(m.truncated, true);
  t.match(m.truncated_reason, /shortened to fit 4096 bytes/);
});

t.test('gitignore patterns: anchors, directories, globs, negation and nesting', async (t) => {
  const rules = [...parseGitignore('# c\n/root-only\n*.tmp\ndocs/**/draft.md\nout/\n!important.tmp\n\\#hash\n', ''), ...parseGitignore('local.txt\n', 'sub')];
  const cases: Array<[string, boolean, boolean]> = [
    ['root-only', false, true], ['a/root-only', false, false], ['x.tmp', false, true], ['deep/y.tmp', false, true],
    ['important.tmp', false, false], ['docs/draft.md', false, true], ['docs/a/b/draft.md', false, true],
    ['out', true, true], ['out', false, false], ['#hash', false, true], ['sub/local.txt', false, true], ['local.txt', false, false],
  ];
  for (const [p, dir, want] of cases) t.equal(isIgnored(rules, p, dir), want, `${p}${dir ? '/' : ''}`);
});

t.test('saving the map is an explicit write that needs write access', async (t) => {
  const sb = sandbox();
  writeFileSync(join(sb.project, 'go.mod'), 'module x\n');
  const ro = await connection(sb);
  t.match((await ro.call('shadow_understand', { save: true })).text, /SC_POLICY_DENIED: tool:shadow_understand.save/);
  t.equal((await ro.call('shadow_memory', { action: 'read' })).data.content, '', 'a plain map saves nothing');
  ro.close();
  await cli(sb, ['--project', sb.project, 'trust']);
  const rw = await connection(sb, { allowWrite: true });
  t.teardown(rw.close);
  const r = await rw.call('shadow_understand', { save: true });
  t.equal(r.data.saved, true);
  t.match((await rw.call('shadow_memory', { action: 'read' })).data.content, /## Project map[\s\S]*test commands: go test \.\/\.\.\./);
});
