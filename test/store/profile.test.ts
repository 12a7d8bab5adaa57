import { chmodSync, mkdirSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { spawn } from 'node:child_process';
import { ensureProfileDir, resolveProfile } from '../../src/store/profile.js';
import { BIN, CODE_CACHE, sandbox } from '../fixtures/env.js';

t.test('resolution order: --profile, then SHADOWCODE_HOME, then XDG_DATA_HOME, then ~/.local/share', async (t) => {
  const env = { SHADOWCODE_HOME: '/h/sc', XDG_DATA_HOME: '/x' };
  t.same(resolveProfile('/abs/prof', env, '/cwd'), { dir: '/abs/prof', explicit: '/abs/prof' });
  t.same(resolveProfile('./rel', env, '/cwd'), { dir: '/cwd/rel', explicit: '/cwd/rel' });
  t.same(resolveProfile('work', env, '/cwd'), { dir: '/x/shadowcode/profiles/work', explicit: 'work' });
  t.same(resolveProfile(undefined, env, '/cwd'), { dir: '/h/sc', explicit: undefined });
  t.same(resolveProfile(undefined, { XDG_DATA_HOME: '/x' }, '/cwd'), { dir: '/x/shadowcode', explicit: undefined });
  t.match(resolveProfile(undefined, { XDG_DATA_HOME: 'relative' }, '/cwd').dir, /\.local\/share\/shadowcode$/, 'a relative XDG_DATA_HOME is ignored, as the XDG spec says');
});

t.test('a linked profile, or a profile below a linked directory, resolves to its real path once', async (t) => {
  const sb = sandbox();
  const real = join(sb.root, 'real');
  mkdirSync(real, { mode: 0o700 });
  symlinkSync(real, join(sb.root, 'link'));
  t.equal(resolveProfile(undefined, { SHADOWCODE_HOME: join(sb.root, 'link') }, '/').dir, real, 'SHADOWCODE_HOME');
  t.equal(resolveProfile('./link', {}, sb.root).dir, real, '--profile DIR');
  t.same(resolveProfile('./link', {}, sb.root).explicit, join(sb.root, 'link'), 'the flag as given is kept for launch commands');
  t.equal(resolveProfile(undefined, { SHADOWCODE_HOME: join(sb.root, 'link', 'new', 'prof') }, '/').dir, join(real, 'new', 'prof'), 'a part not made yet stays below the real parent');
  t.equal(resolveProfile('work', { XDG_DATA_HOME: join(sb.root, 'link') }, '/').dir, join(real, 'shadowcode', 'profiles', 'work'));
});

t.test('a profile name must be a simple name', async (t) => {
  t.throws(() => resolveProfile('bad name!', {}, '/'), { code: 'SC_PROFILE_INVALID' });
  t.throws(() => resolveProfile('', {}, '/'), { code: 'SC_PROFILE_INVALID' });
});

t.test('a new profile directory is created 0700', async (t) => {
  const sb = sandbox();
  ensureProfileDir(sb.profile);
  t.equal(statSync(sb.profile).mode & 0o777, 0o700);
});

t.test('a profile directory that cannot be made is refused with the reason, not retried for ever', async (t) => {
  // Below /proc, Node's recursive mkdir never returns; the profile is refused instead.
  t.throws(() => ensureProfileDir(`/proc/${process.pid}/sc-not-here/profile`), { code: 'SC_PROFILE_INVALID', message: /^cannot create profile directory .*: ENOENT$/ });
});

t.test('a profile directory other users can reach is refused', async (t) => {
  const sb = sandbox();
  mkdirSync(sb.profile);
  chmodSync(sb.profile, 0o755);
  t.throws(() => ensureProfileDir(sb.profile), { code: 'SC_PROFILE_UNSAFE', message: /mode 755; run chmod 700/ });
});

t.test('a profile path that is a file is refused', async (t) => {
  const sb = sandbox();
  const file = join(sb.root, 'project', '..', 'file');
  (await import('node:fs')).writeFileSync(file, 'x');
  t.throws(() => ensureProfileDir(file), { code: 'SC_PROFILE_INVALID' });
});

t.test('using a named profile first, under umask 022, leaves the default profile usable', async (t) => {
  const sb = sandbox();
  const data = join(sb.root, 'data');
  // A real CLI process with the umask most systems give a login shell; no SHADOWCODE_HOME, so the default profile is <data>/shadowcode.
  const env = { PATH: process.env.PATH, HOME: sb.root, XDG_DATA_HOME: data, TMPDIR: join(sb.root, 'tmp'), XDG_CACHE_HOME: CODE_CACHE };
  const run = (...argv: string[]) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn('sh', ['-c', 'umask 022 && exec "$@"', 'sh', process.execPath, BIN, ...argv], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code, stderr }));
    });
  const named = await run('--profile', 'work', 'secret', 'list');
  t.equal(named.code, 0, named.stderr);
  for (const dir of [data, join(data, 'shadowcode'), join(data, 'shadowcode', 'profiles'), join(data, 'shadowcode', 'profiles', 'work')]) {
    t.equal((statSync(dir).mode & 0o777).toString(8), '700', `${dir} is 0700`);
  }
  const plain = await run('secret', 'list');
  t.equal(plain.code, 0, `the default profile still opens: ${plain.stderr}`);
  t.notMatch(plain.stderr, /SC_PROFILE_UNSAFE/);
});
