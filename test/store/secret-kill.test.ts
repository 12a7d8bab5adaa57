// Issue 11, item 9: a `secret set` killed between writing its temp file and the
// rename must not leave every secret behind in that temp file for good.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { BIN, cli, sandbox, spawnCli, withCodeCache } from '../fixtures/env.js';

const temps = (dir: string) => readdirSync(dir).filter((n) => /secrets\.json\..*\.tmp$/.test(n));

/** Every file in the profile that still holds `needle`. */
function holders(dir: string, needle: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).filter((d) => d.isFile() && readFileSync(join(dir, d.name)).includes(needle)).map((d) => d.name);
}

/** The pid of a process that has already exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '']).pid as number;
}

t.test('stale temp files of a dead writer are swept when the store opens, so a removed secret is gone', async (t) => {
  const sb = sandbox('secret-kill');
  // The secret is set in this process: that is only set-up. The open and the write below stay real
  // processes, since the sweep takes this process's own pid for one with no write in flight.
  t.equal((await cli(sb, ['secret', 'set', 'OLD_TOKEN'], 'canary-old-9d8c7b')).code, 0);
  const pid = deadPid();
  // What a writer killed before its rename leaves behind: a full copy of the store, in both naming schemes.
  const copy = readFileSync(join(sb.profile, 'secrets.json'));
  writeFileSync(join(sb.profile, `.secrets.json.${pid}.a1b2c3d4e5f6.tmp`), copy, { mode: 0o600 });
  writeFileSync(join(sb.profile, `secrets.json.${pid}.0a0b0c0d0e0f.tmp`), copy, { mode: 0o600 });
  const alive = `.secrets.json.${process.pid}.ffffffffffff.tmp`; // a writer still running: not touched by a lock-free open
  writeFileSync(join(sb.profile, alive), '{}', { mode: 0o600 });
  const list = await spawnCli(sb, ['--json', 'secret', 'list']);
  t.equal(list.code, 0, list.stderr);
  t.same(JSON.parse(list.stdout).secrets.map((s: { name: string }) => s.name), ['OLD_TOKEN'], 'temp files do not show up as secrets');
  t.same(temps(sb.profile), [alive], 'the dead writer\'s temp files are gone; a live one\'s stays');
  t.equal((await spawnCli(sb, ['secret', 'remove', 'OLD_TOKEN'])).code, 0);
  t.same(temps(sb.profile), [], 'a write holds the lock, so it sweeps every temp file');
  t.same(holders(sb.profile, 'canary-old-9d8c7b'), [], 'the removed value is on disk nowhere in the profile');
});

t.test('a real SIGKILL during secret set leaves the store whole and no temp file after the next open', async (t) => {
  const sb = sandbox('secret-kill-real');
  t.equal((await cli(sb, ['secret', 'set', 'KEEP'], 'canary-keep-4e5f6a')).code, 0);
  // Kills at spread-out moments of a real `secret set` with a large value: some land before the
  // write, some during it, some after. Whatever the timing, the same invariant must hold.
  const delays = [0, 40, 80, 120, 160, 220, 300, 400];
  for (const [i, delay] of delays.entries()) {
    // From a code cache, as a user's CLI starts once it has run: with KEEP set in this process, no
    // earlier CLI process in the sandbox leaves one, and compiling first would move every kill earlier.
    const child = spawn(process.execPath, [BIN, 'secret', 'set', `BIG_${i}`], { env: withCodeCache(sb.env), stdio: ['pipe', 'ignore', 'ignore'] });
    child.stdin.on('error', () => {});
    child.stdin.end('v'.repeat(60000));
    const exited = new Promise((r) => child.on('close', r));
    await new Promise((r) => setTimeout(r, delay));
    child.kill('SIGKILL');
    await exited;
    // The next open, in this process (its pid is not the killed writer's, so the sweep is the same).
    const list = await cli(sb, ['--json', 'secret', 'list']);
    t.equal(list.code, 0, `after a kill at ${delay} ms the store still opens: ${list.stderr}`);
    const names = JSON.parse(list.stdout).secrets.map((s: { name: string }) => s.name);
    t.ok(names.includes('KEEP'), `after a kill at ${delay} ms no earlier secret is lost`);
    t.same(temps(sb.profile), [], `after a kill at ${delay} ms no temp file is left`);
    JSON.parse(readFileSync(join(sb.profile, 'secrets.json'), 'utf8'));
  }
  t.equal((await cli(sb, ['secret', 'remove', 'KEEP'])).code, 0);
  t.same(holders(sb.profile, 'canary-keep-4e5f6a'), [], 'and a removed value is then gone from disk');
});
