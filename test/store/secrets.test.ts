import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ROOT, sandbox, spawnCli } from '../fixtures/env.js';

t.test('a stored secret lives only in secrets.json, mode 0600', async (t) => {
  const sb = sandbox();
  const set = await spawnCli(sb, ['secret', 'set', 'API_TOKEN'], 'canary-value-7f3a9c\n');
  t.equal(set.code, 0, set.stderr);
  t.notMatch(set.stdout + set.stderr, /canary-value/);
  t.equal(statSync(join(sb.profile, 'secrets.json')).mode & 0o777, 0o600);
  t.match(readFileSync(join(sb.profile, 'secrets.json'), 'utf8'), /canary-value-7f3a9c/);
  t.notMatch(readFileSync(join(sb.profile, 'state.db')).toString('latin1'), /canary-value/, 'not in state.db');
  const wal = join(sb.profile, 'state.db-wal');
  try {
    t.notMatch(readFileSync(wal).toString('latin1'), /canary-value/, 'not in the WAL either');
  } catch {
    /* no WAL file left is also fine */
  }
});

t.test('two processes storing different secrets at once both keep their value', async (t) => {
  const sb = sandbox();
  await spawnCli(sb, ['status']);
  const runs = await Promise.all(Array.from({ length: 6 }, (_, i) => spawnCli(sb, ['secret', 'set', `NAME_${i}`], `value-number-${i}`)));
  t.same(runs.map((r) => r.code), [0, 0, 0, 0, 0, 0], runs.map((r) => r.stderr).join(''));
  const list = JSON.parse((await spawnCli(sb, ['--json', 'secret', 'list'])).stdout);
  t.same(list.secrets.map((s: { name: string }) => s.name), ['NAME_0', 'NAME_1', 'NAME_2', 'NAME_3', 'NAME_4', 'NAME_5']);
  const file = JSON.parse(readFileSync(join(sb.profile, 'secrets.json'), 'utf8'));
  for (let i = 0; i < 6; i++) t.equal(file.secrets[`NAME_${i}`].value, `value-number-${i}`);
});

t.test('the hidden prompt reads a value typed at a real terminal without echoing it', async (t) => {
  const sb = sandbox();
  // `script` gives the child a real pseudo-terminal; the value is typed after the prompt appears.
  const child = spawn('script', ['-qfec', `${process.execPath} ${join(ROOT, 'bin', 'shadowcode.js')} secret set TYPED_TOKEN`, '/dev/null'], { env: sb.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
    if (out.includes('input hidden') && !out.includes('__sent__')) {
      out += '__sent__';
      child.stdin.write('typed-secret-42\r');
    }
  });
  const code = await new Promise((resolve) => child.on('close', resolve));
  t.equal(code, 0, out);
  t.notMatch(out, /typed-secret-42/, 'the value is not echoed');
  t.match(out, /stored secret TYPED_TOKEN/);
  t.equal(JSON.parse(readFileSync(join(sb.profile, 'secrets.json'), 'utf8')).secrets.TYPED_TOKEN.value, 'typed-secret-42');
});
