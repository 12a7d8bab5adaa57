// The profile as every command sees it, with real processes: a SHADOWCODE_HOME that
// is a symbolic link is resolved once, so engine start, status and stop and mcp serve
// all work with it and no engine is left behind; engine.log is never followed through
// a link; a socket that is not an engine socket is an integrity failure (exit 4).
import { chmodSync, mkdirSync, readFileSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { call } from '../fixtures/agent-e2e.js';
import { alive, cli, sandbox, spawnCli, until } from '../fixtures/env.js';
import { connect } from '../fixtures/mcp.js';

function linkedProfile(name: string) {
  const sb = sandbox(name);
  const real = join(sb.root, 'real-profile');
  mkdirSync(real, { mode: 0o700 });
  chmodSync(real, 0o700);
  symlinkSync(real, join(sb.root, 'linked-profile'));
  sb.env.SHADOWCODE_HOME = join(sb.root, 'linked-profile');
  return { sb, real };
}

t.test('engine start, status and stop and mcp serve work with a linked SHADOWCODE_HOME', async (t) => {
  const { sb, real } = linkedProfile('link');
  const start = await spawnCli(sb, ['--json', 'engine', 'start']);
  t.equal(start.code, 0, start.stderr);
  const started = JSON.parse(start.stdout);
  t.teardown(() => {
    if (alive(started.engine.pid)) process.kill(started.engine.pid, 'SIGKILL');
  });
  t.match(started, { started: true, socket: join(real, 'engine.sock') }, 'the engine lives in the real directory');
  // The questions to the running engine and the trust run in this process: the profile is resolved
  // by the same code there, and the engine answers them on its socket all the same.
  const again = await cli(sb, ['--json', 'engine', 'start']);
  t.equal(again.code, 0, again.stderr);
  t.match(JSON.parse(again.stdout), { started: false, engine: { pid: started.engine.pid } }, 'a second start finds it');
  const status = await cli(sb, ['--json', 'engine', 'status']);
  t.equal(status.code, 0, status.stderr);
  t.match(JSON.parse(status.stdout), { running: true, profile: real, engine: { pid: started.engine.pid } });

  await cli(sb, ['--project', sb.project, 'trust']);
  const peer = await connect(sb, 'v1', ['--allow-write']);
  t.match((await call(peer, 'shadow_status')).engine, { mode: 'shared', pid: started.engine.pid, profile: real }, 'a server uses the engine through the link');
  await peer.close();

  const stop = await spawnCli(sb, ['--json', 'engine', 'stop']);
  t.equal(stop.code, 0, stop.stderr);
  t.match(JSON.parse(stop.stdout), { stopped: true, pid: started.engine.pid });
  await until(() => !alive(started.engine.pid), 10000);
  t.notOk(alive(started.engine.pid), 'no engine is left behind');
});

t.test('engine start refuses an engine.log that is a link, and follows nothing', async (t) => {
  const { sb, real } = linkedProfile('log');
  const target = join(sb.root, 'elsewhere.txt');
  writeFileSync(target, 'untouched\n');
  symlinkSync(target, join(real, 'engine.log'));
  // In this process: the refusal comes before any engine is spawned.
  const r = await cli(sb, ['engine', 'start']);
  t.equal(r.code, 1);
  t.match(r.stderr, /engine\.log is a symbolic link; remove it .*\[SC_ENGINE_START_FAILED\]/);
  t.equal(readFileSync(target, 'utf8'), 'untouched\n', 'nothing was written through the link');
  unlinkSync(join(real, 'engine.log'));
});

t.test('a profile whose engine.sock is not a socket: refused as an integrity failure, exit 4', async (t) => {
  const { sb, real } = linkedProfile('peer');
  writeFileSync(join(real, 'engine.sock'), '', { mode: 0o600 });
  const r = await spawnCli(sb, ['engine', 'status']);
  t.equal(r.code, 4, 'not 3, which is for policy denials');
  t.match(r.stderr, /is not an engine socket \[SC_ENGINE_PEER_REFUSED\]/);
});
