// Agent jobs: one writing task per project at a time (also across engines on
// one profile), visible as queued; an owner that ends takes its tasks with it,
// and a queued one never reaches the model.
import t from 'tap';
import { NativeLoop } from '../../src/agent/loop.js';
import { Engine } from '../../src/engine/engine.js';
import { getJob, pendingApprovals } from '../../src/engine/jobs.js';
import { agentBench, scripted, type Scripted } from '../fixtures/agent.js';
import { decideAsCli } from '../fixtures/decide.js';
import { until } from '../fixtures/env.js';

const waitsForApproval = () => scripted([{ calls: [{ name: 'run_command', arguments: { argv: ['true'] } }] }, { calls: [{ name: 'finish', arguments: { summary: 'done' } }] }]);

t.test('a second build task of the project waits, visible as queued, while a plan task runs alongside', async (t) => {
  const models = new Map<string, Scripted>();
  const b = await agentBench((id) => {
    const m = waitsForApproval();
    models.set(id, m);
    return m;
  });
  t.teardown(() => b.close());
  const first = b.submit('build one');
  await until(() => getJob(b.engine.db(), first.id)?.state === 'waiting_approval');
  const second = b.submit('build two');
  const plan = b.submit('plan it', { mode: 'plan' });
  t.equal((await b.settle(plan.id)).state, 'succeeded', 'a reading task does not wait for the writer');
  t.equal(getJob(b.engine.db(), second.id)?.state, 'queued', 'the second writer is queued');
  t.notOk(models.has(second.id), 'and has not reached a model');
  const [a] = pendingApprovals(b.engine.db(), { project: b.sb.project, jobId: first.id });
  decideAsCli({ policy: b.engine.policy, db: b.engine.db() }, a!.id, 'approved');
  b.engine.jobs().sync();
  t.equal((await b.settle(first.id)).state, 'succeeded');
  await until(() => getJob(b.engine.db(), second.id)?.state === 'waiting_approval');
  t.ok(models.has(second.id), 'the second starts once the first is done');
  await b.engine.jobs().cancel(second.id);
});

t.test("a build task held by another engine on the same profile keeps this engine's build task queued", async (t) => {
  const b = await agentBench(() => waitsForApproval());
  t.teardown(() => b.close());
  const other = new Engine(b.sb.profile, b.policy, b.sb.env);
  t.teardown(() => other.shutdown());
  other.jobs().useAgentRunners(() => new NativeLoop(waitsForApproval(), { policy: b.policy, db: () => other.db(), gateEnv: { policy: b.policy, db: () => other.db() }, env: b.sb.env }));
  const held = other.jobs().submitAgent({ project: b.sb.project, owner: `stdio:${process.pid}:other`, ceiling: 'workspace', prompt: 'hold', mode: 'build', modelId: null, principal: { kind: 'stdio', owner: 'x', allow_write: true, allow_approvals: true } });
  await until(() => getJob(b.engine.db(), held.id)?.state === 'waiting_approval');
  const mine = b.submit('wait');
  await new Promise((r) => setTimeout(r, b.policy.limits.agent.queue_poll_ms * 3));
  t.equal(getJob(b.engine.db(), mine.id)?.state, 'queued');
  await other.jobs().cancel(held.id);
  await until(() => getJob(b.engine.db(), mine.id)?.state === 'waiting_approval');
  t.pass('it starts when the other engine releases the project');
  await b.engine.jobs().cancel(mine.id);
});

t.test('an owner that ends cancels its running and queued tasks; the queued one never reaches the model; others go on', async (t) => {
  const seen: string[] = [];
  const b = await agentBench((id) => {
    seen.push(id);
    return waitsForApproval();
  });
  t.teardown(() => b.close());
  const running = b.submit('one', { owner: `stdio:${process.pid}:a` });
  await until(() => getJob(b.engine.db(), running.id)?.state === 'waiting_approval');
  const queued = b.submit('two', { owner: `stdio:${process.pid}:a` });
  const other = b.submit('plan', { owner: `stdio:${process.pid}:b`, mode: 'plan' });
  await b.engine.releaseOwner(`stdio:${process.pid}:a`);
  t.equal(getJob(b.engine.db(), running.id)?.state, 'cancelled');
  t.equal(getJob(b.engine.db(), queued.id)?.state, 'cancelled');
  t.notOk(seen.includes(queued.id), 'the queued task never got a model');
  t.throws(() => b.submit('late', { owner: `stdio:${process.pid}:a` }), { code: 'SC_CANCELLED' }, 'an ended owner cannot submit');
  t.equal((await b.settle(other.id)).state, 'succeeded', "the other owner's task finished");
});
