// The engine a server is a door to, facing a real shared engine (`engine start`) from
// this process. When one of its ownership sockets closes, the shared engine may be
// dying or may have dropped just that socket: it stays in use while its pid lives,
// and its death is still noticed, and said, however long after the socket it comes;
// once this side has shut down, nothing more is watched or said.
import t, { type Test } from 'tap';
import type { EngineLink } from '../../src/engine/daemon/client.js';
import { RemoteEngine } from '../../src/engine/daemon/remote.js';
import { Engine } from '../../src/engine/engine.js';
import { type Policy, shippedPolicy } from '../../src/policy/load.js';
import { startEngine } from '../fixtures/engine.js';
import { cli, sandbox, sleep, until } from '../fixtures/env.js';

/** The shipped policy with a shorter kill grace, so the first quick probes end within 100 ms. */
function quickGrace(): Policy {
  const p = shippedPolicy();
  return { ...p, limits: { ...p.limits, ownership: { ...p.limits.ownership, kill_grace_ms: 10 } } };
}

/**
 * A real shared engine and an Engine of this process that forwards to it, with one job
 * submitted and then the job's ownership socket dropped from this side, as a broken
 * connection would: the engine process lives on.
 */
async function droppedSocket(t: Test, name: string) {
  const sb = sandbox(name);
  await cli(sb, ['--project', sb.project, 'trust']);
  const proc = await startEngine(t, sb);
  const policy = quickGrace();
  const engine = new Engine(sb.profile, policy, sb.env);
  const remote = await RemoteEngine.find({ policy, db: () => engine.db() }, sb.profile, { kind: 'stdio', owner: name });
  if (!remote) throw new Error('the shared engine was not found');
  engine.useShared(remote);
  const said: string[] = [];
  engine.onSharedLost = (m) => said.push(m);
  const owner = { label: `stdio:${process.pid}:abcd`, transport: 'stdio', project: sb.project } as const;
  await engine.submitJob(owner, { kind: 'test', argv: ['true'], ceiling: 'workspace', task_id: null });
  const links = (remote as unknown as { owners: Map<string, Promise<EngineLink>> }).owners;
  (await links.get(owner.label))?.destroy();
  return { proc, engine, said };
}

t.test('a shared engine that outlives a closed ownership socket stays in use, and its later death is still reported', async (t) => {
  const { proc, engine, said } = await droppedSocket(t, 'watch');
  t.teardown(() => engine.shutdown());
  // Well past the quick probes (10 × 10 ms): an engine still alive then is still the one in use.
  await sleep(400);
  t.same(said, [], 'nothing is said while the engine lives');
  t.equal(engine.sharedPid, proc.pid, 'the live engine is still in use');

  proc.child.kill('SIGKILL');
  await proc.exited;
  // Noticed by the watch on its own: nothing here asks the engine for its mode or pid meanwhile.
  await until(() => said.length > 0, 5000);
  t.equal(said.length, 1, 'its death is said once');
  t.match(said[0], new RegExp(`shared engine \\(pid ${proc.pid}\\) is gone`), 'with the pid that went');
  t.equal(engine.mode, 'temporary');
  t.match(engine.lostShared, { pid: proc.pid });
});

t.test('a watch started before shutdown ends with it: nothing is said, and the closed store is not reopened', async (t) => {
  const { proc, engine, said } = await droppedSocket(t, 'watch-shutdown');
  await sleep(200);
  await engine.shutdown();
  proc.child.kill('SIGKILL');
  await proc.exited;
  await sleep(1200); // more than two of the watch's slow probes
  t.same(said, [], 'the shut-down engine says nothing of it');
  t.equal(engine.lostShared, null, 'and settled nothing');
});
