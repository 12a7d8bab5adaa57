import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { loadPolicy, shippedPolicy, verifiedAtBuild } from '../../src/policy/load.js';
import { ROOT, sandbox } from '../fixtures/env.js';

function policyCopy(t: Test, edit: (dir: string) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'sc-policy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(join(ROOT, 'policy'), dir, { recursive: true });
  edit(dir);
  return dir;
}
function editJson(dir: string, file: string, fn: (v: any) => void): void {
  const p = join(dir, file);
  const v = JSON.parse(readFileSync(p, 'utf8'));
  fn(v);
  writeFileSync(p, JSON.stringify(v));
}
function rejects(t: Test, dir: string, pattern: RegExp, name: string): void {
  t.throws(() => loadPolicy(dir), { code: 'SC_POLICY_INVALID', message: pattern }, name);
}

t.test('loads the shipped policy, deep-frozen and stamped with a content hash', async (t) => {
  const p = shippedPolicy();
  t.match(p.hash, /^[0-9a-f]{64}$/);
  t.ok(Object.isFrozen(p));
  t.ok(Object.isFrozen(p.limits.stdio_server));
  t.ok(Object.isFrozen(p.permissions.rules[0]));
  t.throws(() => {
    (p.limits.stdio_server as { frame_bytes: number }).frame_bytes = 1;
  });
  t.equal(p.limits.stdio_server.frame_bytes, 1048576);
});

t.test('the hash follows content, not formatting', async (t) => {
  const a = loadPolicy(policyCopy(t, (d) => editJson(d, 'limits.json', () => {})));
  t.equal(a.hash, shippedPolicy().hash, 're-serialised JSON has the same hash');
  const b = loadPolicy(policyCopy(t, (d) => editJson(d, 'limits.json', (v) => (v.tokens.max_length = 256))));
  t.not(b.hash, shippedPolicy().hash, 'a changed limit changes the hash');
});

t.test('a broken policy file is a startup error naming the file and the path', async (t) => {
  rejects(t, policyCopy(t, (d) => writeFileSync(join(d, 'limits.json'), '{ not json')), /^policy\/limits\.json is not valid JSON/, 'invalid JSON');
  rejects(t, policyCopy(t, (d) => rmSync(join(d, 'environment.json'))), /^policy\/environment\.json cannot be read: ENOENT/, 'missing file');
  rejects(t, policyCopy(t, (d) => editJson(d, 'limits.json', (v) => (v.stdio_server.frame_bytes = 'big'))), /^policy\/limits\.json at \/stdio_server\/frame_bytes: must be integer/, 'wrong type');
  rejects(t, policyCopy(t, (d) => editJson(d, 'limits.json', (v) => (v.http_server.surprise = 1))), /policy\/limits\.json at \/http_server: has unknown property "surprise"/, 'unknown key');
  rejects(t, policyCopy(t, (d) => editJson(d, 'permissions.json', (v) => v.rules.push({ ...v.rules[0] }))), /policy\/permissions\.json at \/rules\/\d+\/id: duplicate rule id/, 'duplicate rule id');
  rejects(t, policyCopy(t, (d) => editJson(d, 'permissions.json', (v) => (v.rules[0].when = { 'principal.mood': 'happy' }))), /policy\/permissions\.json at \/rules\/0\/when/, 'unknown attribute in a condition');
  rejects(t, policyCopy(t, (d) => editJson(d, 'permissions.json', (v) => (v.rules[0].effect = 'maybe'))), /policy\/permissions\.json at \/rules\/0\/effect: must be one of "permit", "forbid"/, 'unknown effect');
  rejects(t, policyCopy(t, (d) => editJson(d, 'limits.json', (v) => (v.tokens.min_length = 600))), /policy\/limits\.json at \/tokens: minimum 600 exceeds maximum 512/, 'min above max');
  rejects(t, policyCopy(t, (d) => editJson(d, 'environment.json', (v) => v.allow.push('BAD NAME'))), /policy\/environment\.json at \/allow\/\d+: must match pattern/, 'bad variable name');
});

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

t.test('a file the build verified is trusted only for exactly the bytes it verified', async (t) => {
  const text = readFileSync(join(ROOT, 'policy', 'limits.json'), 'utf8');
  const verified = { 'limits.json': sha256(text) };
  t.ok(verifiedAtBuild('limits.json', text, verified), 'the same bytes');
  t.notOk(verifiedAtBuild('limits.json', text.replace('1048576', '1048577'), verified), 'one digit changed');
  t.notOk(verifiedAtBuild('limits.json', `${text} `, verified), 'only whitespace added');
  t.notOk(verifiedAtBuild('sandbox.json', text, verified), 'another file with these bytes');
  t.notOk(verifiedAtBuild('limits.json', text), 'from source no file is verified, so every file is checked');
});

t.test('the built CLI skips checks only for the shipped bytes: an edited file is still refused', async (t) => {
  const bundle = readFileSync(join(ROOT, 'dist', 'cli.cjs'), 'latin1');
  for (const file of readdirSync(join(ROOT, 'policy')).filter((f) => f.endsWith('.json'))) {
    t.ok(bundle.includes(`"${file}":"${sha256(readFileSync(join(ROOT, 'policy', file), 'utf8'))}"`), `the build verified policy/${file}`);
  }
  // A copy of the package whose policy can be edited: the CLI reads policy/ beside dist/.
  const pkg = mkdtempSync(join(tmpdir(), 'sc-pkg-'));
  t.teardown(() => rmSync(pkg, { recursive: true, force: true }));
  for (const part of ['bin', 'dist', 'policy', 'package.json']) cpSync(join(ROOT, part), join(pkg, part), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'));
  const sb = sandbox('policy');
  const status = (...flags: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [join(pkg, 'bin', 'shadowcode.js'), ...flags, 'status'], { env: sb.env }, (err, stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stdout, stderr })),
    );
  const shipped = await status('--json');
  t.equal(shipped.code, 0, 'the shipped policy loads');
  editJson(join(pkg, 'policy'), 'limits.json', (v) => (v.tokens.max_length = 'long'));
  const edited = await status('--json');
  t.not(edited.code, 0);
  t.match(JSON.parse(edited.stdout), { error: { code: 'SC_POLICY_INVALID', message: 'policy/limits.json at /tokens/max_length: must be integer' } });
  // The error is reported as one line, although reporting it scrubs with bounds from that same policy.
  const text = await status();
  t.not(text.code, 0);
  t.equal(text.stderr, 'shadowcode: policy/limits.json at /tokens/max_length: must be integer [SC_POLICY_INVALID]\n');
});
