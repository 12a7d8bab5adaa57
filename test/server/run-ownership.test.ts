// SIGKILL of a stdio server with one task running a command and one queued:
// the queued task never reaches the model (the fake counts requests), the
// command's process group dies, and a task of another owner, queued behind the
// killed one for the project's writer slot, then runs and finishes.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { Engine } from '../../src/engine/engine.js';
import { getJob } from '../../src/engine/jobs.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { call, type Format, nextStop, useFakeModels } from '../fixtures/agent-e2e.js';
import { alive, cli, pidsOf, recordPid, sandbox, sleep, until } from '../fixtures/env.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { connect } from '../fixtures/mcp.js';


for (const format of ['openai', 'anthropic'] as Format[]) {
  t.test(`${format}: SIGKILL of the owner stops its command group; its queued task never reaches the model; another owner finishes`, async (t) => {
    const sb = sandbox('own');
    await cli(sb, ['--project', sb.project, 'trust']);
    const long = JSON.stringify({ argv: ['sh', '-c', `sleep 60 & ${recordPid('$!', 'pids')}; ${recordPid('$$', 'pids')}; wait`] });
    const fakeA = await startFakeModel({ format, script: [{ tool_calls: [{ id: 'a1', name: 'run_command', arguments: long }], finish: 'tool_calls' }, { text: 'should never be asked' }] });
    t.teardown(() => fakeA.close());
    const fakeB = await startFakeModel({ format, script: [{ tool_calls: [{ id: 'b1', name: 'finish', arguments: JSON.stringify({ summary: 'b finished' }) }], finish: 'tool_calls' }] });
    t.teardown(() => fakeB.close());

    useFakeModels(sb, [{ format, url: fakeA.url, id: 'a' }, { format, url: fakeB.url, id: 'b' }]);
    const a = await connect(sb, 'v2-modern', ['--allow-write', '--allow-approvals']);
    const b = await connect(sb, 'v1', ['--allow-write', '--allow-approvals']);
    t.teardown(() => b.close());

    const running = await call(a, 'shadow_run', { prompt: 'run the long thing', mode: 'build', permission_level: 'workspace', model: 'a' });
    const stop = await nextStop(a, running.job_id);
    await call(a, 'shadow_approve', { approval_id: stop.approvals[0].id, decision: 'approve' });
    await until(() => pidsOf(join(sb.project, 'pids')).length === 2);
    const pids = pidsOf(join(sb.project, 'pids'));
    t.ok(pids.every(alive), 'the command and its child run');
    const queued = await call(a, 'shadow_run', { prompt: 'second writer', mode: 'build', permission_level: 'workspace', model: 'a' });
    const other = await call(b, 'shadow_run', { prompt: 'other owner', mode: 'build', permission_level: 'workspace', model: 'b' });
    await sleep(300);
    t.equal((await call(a, 'shadow_jobs', { action: 'events', job_id: queued.job_id, limit: 1 })).job.state, 'queued', 'visible as queued');
    t.equal((await call(b, 'shadow_jobs', { action: 'events', job_id: other.job_id, limit: 1 })).job.state, 'queued', "the other owner's writer waits for the project too");

    const serverPid = Number((await call(a, 'shadow_status')).connection.owner.split(':')[1]);
    process.kill(serverPid, 'SIGKILL');
    await until(() => !pids.some(alive), 5000);
    t.ok(!pids.some(alive), "the command's process group is gone");
    const end = await nextStop(b, other.job_id);
    t.match(end.answer, { state: 'succeeded', summary: 'b finished' }, "the other owner's task finished");
    t.equal(fakeA.requests.length, 1, 'the queued task never reached the model');
    t.equal(fakeB.requests.length, 1);

    const e = new Engine(sb.profile, shippedPolicy(), sb.env);
    e.jobs();
    t.equal(getJob(e.db(), running.job_id)?.state, 'cancelled');
    t.equal(getJob(e.db(), queued.job_id)?.state, 'cancelled');
    await e.shutdown();
  });
}
