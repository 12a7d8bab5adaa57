// `shadowcode jobs cancel ID` from another process, with real processes: a job running in
// an `mcp serve` process's own engine, or in the shared engine, is stopped by the process
// running it (its whole process group), its pending approvals are cancelled, and a job
// that already ended is refused. The first cancel of the first test runs as a new process, as a
// user's would; the others run in this process, which is not the job's runner either: request
// and answer go through the store all the same.
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { openDb } from '../../src/store/db.js';
import { alive, cli, pidsOf, recordPid, type Sandbox, sandbox, spawnCli, until } from '../fixtures/env.js';
import { startEngine } from '../fixtures/engine.js';
import { connect, type Peer } from '../fixtures/mcp.js';

const long = ['sh', '-c', `sleep 60 & ${recordPid('$!', 'pids')}; ${recordPid('$$', 'pids')}; wait`];

const jobOf = (sb: Sandbox, id: string) => {
  const db = openDb(sb.profile, 5000);
  try {
    const job = db.prepare('SELECT state FROM jobs WHERE id = ?').get(id) as { state: string };
    const kinds = (db.prepare('SELECT kind FROM job_events WHERE job_id = ? ORDER BY seq').all(id) as Array<{ kind: string }>).map((e) => e.kind);
    const approvals = (db.prepare('SELECT state FROM approvals WHERE job_id = ?').all(id) as Array<{ state: string }>).map((a) => a.state);
    const audit = (db.prepare("SELECT body FROM audit WHERE body LIKE '%cli:jobs.cancel%'").all() as Array<{ body: string }>).map((r) => r.body);
    return { state: job.state, kinds, approvals, audit };
  } finally {
    db.close();
  }
};

const submit = async (peer: Peer, argv: string[]) => (await peer.callTool({ name: 'shadow_test', arguments: { command: argv } })).structuredContent as unknown as { job_id: string; approval: { id: string } };
/** `jobs cancel ID` as a new process (with the suite's code cache: its HOME has none) or, `here`, in this one. */
const cancel = async (sb: Sandbox, id: string, here = false) => {
  const argv = ['--project', sb.project, '--json', 'jobs', 'cancel', id];
  const r = here ? await cli(sb, argv) : await spawnCli(sb, argv);
  return { code: r.code, out: JSON.parse(r.stdout), stderr: r.stderr };
};

async function cancelsRunningJob(t: Test, sb: Sandbox, peer: Peer, here = false) {
  const sub = await submit(peer, long);
  t.equal((await cli(sb, ['--project', sb.project, 'approvals', 'approve', sub.approval.id])).code, 0);
  await until(() => {
    const pids = pidsOf(join(sb.project, 'pids'));
    return pids.length === 2 && pids.every(alive);
  }, 20000);
  const pids = pidsOf(join(sb.project, 'pids'));
  t.equal(jobOf(sb, sub.job_id).state, 'running');

  const r = await cancel(sb, sub.job_id, here);
  t.equal(r.code, 0, r.stderr);
  t.match(r.out, { job: { id: sub.job_id, state: 'cancelled' }, ended: true }, 'the command waits until the job is cancelled and prints it');
  await until(() => !pids.some(alive), 10000);
  t.notOk(pids.some(alive), 'the shell and its background sleep are gone');
  const after = jobOf(sb, sub.job_id);
  t.ok(after.kinds.includes('cancel_requested'), 'the request is in the job log');
  t.ok(after.audit.some((b) => b.includes(sub.job_id)), 'the cancel is audited as a cli action');

  const again = await cancel(sb, sub.job_id, true);
  t.equal(again.code, 1, 'a job that ended is refused');
  t.equal(again.out.error.code, 'SC_JOB_NOT_RUNNING');
}

t.test("cancels a job running in an mcp serve process's own engine, from another process", async (t) => {
  const sb = sandbox('cancel-serve');
  await cli(sb, ['--project', sb.project, 'trust']);
  const peer = await connect(sb, 'v1', ['--allow-write']);
  t.teardown(() => peer.close());
  await cancelsRunningJob(t, sb, peer);

  // A job still waiting for its approval: cancelled, and its approval with it.
  const waiting = await submit(peer, ['sh', '-c', 'echo ran > ran.txt']);
  const r = await cancel(sb, waiting.job_id, true);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.out.job.state, 'cancelled');
  t.same(jobOf(sb, waiting.job_id).approvals, ['cancelled'], 'its pending approval is cancelled');

  const unknown = await cancel(sb, 'job_nosuchjob', true);
  t.equal(unknown.out.error.code, 'SC_JOB_NOT_FOUND');
});

t.test('cancels a job running in the shared engine, from a process that does not own it', async (t) => {
  const sb = sandbox('cancel-engine');
  await cli(sb, ['--project', sb.project, 'trust']);
  const engine = await startEngine(t, sb);
  const peer = await connect(sb, 'v1', ['--allow-write']);
  t.teardown(() => peer.close());
  await cancelsRunningJob(t, sb, peer, true);
  t.ok(alive(engine.pid), 'the engine keeps running');
});

t.test('a job whose server was SIGKILLed is settled by the cancel itself, not refused', async (t) => {
  const sb = sandbox('cancel-dead');
  await cli(sb, ['--project', sb.project, 'trust']);
  const peer = await connect(sb, 'v1', ['--allow-write']);
  const sub = await submit(peer, ['sh', '-c', 'echo ran > ran.txt']);
  const pid = Number(((await peer.callTool({ name: 'shadow_status', arguments: {} })).structuredContent as any).connection.owner.split(':')[1]);
  process.kill(pid, 'SIGKILL');
  await until(() => !alive(pid));
  t.equal(jobOf(sb, sub.job_id).state, 'waiting_approval', 'nothing settled it yet');
  const r = await cancel(sb, sub.job_id, true);
  t.equal(r.code, 0, r.stderr);
  t.match(r.out, { job: { state: 'cancelled' }, ended: true });
  const after = jobOf(sb, sub.job_id);
  t.ok(after.kinds.includes('owner_gone'), 'with the reason');
  t.same(after.approvals, ['cancelled']);
  const again = await cancel(sb, sub.job_id, true);
  t.equal(again.out.error.code, 'SC_JOB_NOT_RUNNING', 'a second cancel finds it ended');
});
