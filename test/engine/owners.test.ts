// Dead owners, with real processes: a `shadowcode run` or `mcp serve` killed while its
// job waits for an approval. Whatever opens the profile next (here `approvals`, run as
// a new process) settles the job: no longer listed, approving it is refused, the store
// says cancelled with owner_gone. SIGTERM and SIGHUP of `run` settle the task
// themselves and remove the coding-CLI runner's temp dir; after a SIGKILL the next
// open removes it.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { pidRunning } from '../../src/engine/owners.js';
import { openDb } from '../../src/store/db.js';
import { useFakeModel } from '../fixtures/agent-e2e.js';
import { BIN, cli, type Sandbox, sandbox, spawnCli, until, withCodeCache } from '../fixtures/env.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { connect } from '../fixtures/mcp.js';
import { FIXTURES } from '../fixtures/runner-task.js';

// With the suite's shared code cache, as spawnCli: in a fresh HOME each process would compile
// the bundle from scratch and write a cache of its own at exit.
function runCli(sb: Sandbox, argv: string[]) {
  const child = spawn(process.execPath, [BIN, '--project', sb.project, ...argv], { cwd: sb.root, env: withCodeCache(sb.env), stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exit = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return { child, out: () => out, err: () => err, exit };
}

const jobOf = (sb: Sandbox, id: string) => {
  const db = openDb(sb.profile, 5000);
  try {
    const job = db.prepare('SELECT state FROM jobs WHERE id = ?').get(id) as { state: string };
    const kinds = (db.prepare('SELECT kind FROM job_events WHERE job_id = ? ORDER BY seq').all(id) as Array<{ kind: string }>).map((e) => e.kind);
    const approvals = (db.prepare('SELECT state FROM approvals WHERE job_id = ?').all(id) as Array<{ state: string }>).map((a) => a.state);
    return { state: job.state, kinds, approvals };
  } finally {
    db.close();
  }
};

const approvalJob = (sb: Sandbox, approvalId: string) => {
  const db = openDb(sb.profile, 5000);
  try {
    return (db.prepare('SELECT job_id FROM approvals WHERE id = ?').get(approvalId) as { job_id: string }).job_id;
  } finally {
    db.close();
  }
};

/** A build task whose first step asks to run a command, so it waits for an approval. */
async function waitingRun(t: Test, sb: Sandbox) {
  await cli(sb, ['--project', sb.project, 'trust']);
  const fake = await startFakeModel({
    format: 'openai',
    script: [{ tool_calls: [{ id: 'c1', name: 'run_command', arguments: JSON.stringify({ argv: ['sh', '-c', 'echo ran > ran.txt'] }) }], finish: 'tool_calls' }, { text: 'never asked' }],
  });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const r = runCli(sb, ['run', '--level', 'workspace', 'write ran.txt']);
  t.teardown(() => r.child.kill('SIGKILL'));
  await until(() => /approvals approve (appr_\w+)/.test(r.err()), 20000);
  const approval = /approvals approve (appr_\w+)/.exec(r.err())![1]!;
  return { r, approval, job: approvalJob(sb, approval) };
}

/**
 * What a user does next: list, from a new process (the first to open the profile after the
 * death), then try to approve. The approve runs in this process, which is not the dead
 * owner either: by then the refusal is what the store says, whoever asks.
 */
async function afterDeath(t: Test, sb: Sandbox, approval: string, job: string, reaped = true) {
  const list = await spawnCli(sb, ['--project', sb.project, '--json', 'approvals']);
  t.equal(list.code, 0, list.stderr);
  t.same(JSON.parse(list.stdout).approvals, [], 'approvals no longer lists it');
  const approve = await cli(sb, ['--project', sb.project, '--json', 'approvals', 'approve', approval]);
  t.equal(approve.code, 1, 'approving it fails');
  t.equal(JSON.parse(approve.stdout).error.code, 'SC_APPROVAL_NOT_PENDING');
  const after = jobOf(sb, job);
  t.equal(after.state, 'cancelled', 'the store says cancelled');
  if (reaped) t.ok(after.kinds.includes('owner_gone'), 'with the reason');
  t.same(after.approvals, ['cancelled'], 'its approval is cancelled, not approved');
  t.notOk(existsSync(join(sb.project, 'ran.txt')), 'nothing ran');
}

t.test('a process is running until it is a zombie or gone, even when it is collected between the probes', async (t) => {
  t.ok(pidRunning(process.pid), 'this process');
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  const exited = new Promise((r) => child.on('exit', r));
  const pid = child.pid as number;
  t.ok(pidRunning(pid), 'a live child');
  child.kill('SIGKILL');
  // Killed: a zombie until Node collects it, then gone; neither is running.
  await until(() => !pidRunning(pid));
  await exited;
  t.notOk(pidRunning(pid), 'collected: gone');
  // The signal probe still finds the process, and then its /proc entry is gone: its parent just collected it.
  const reapedBetween = () => {
    throw Object.assign(new Error('ENOENT: no such file or directory'), { code: 'ENOENT' });
  };
  t.notOk(pidRunning(process.pid, reapedBetween), 'gone between the two probes counts as gone');
  const unreadable = () => {
    throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
  };
  t.ok(pidRunning(process.pid, unreadable), 'an unreadable entry leaves the signal probe to decide');
});

t.test('a SIGKILLed run: the next command that opens the profile settles its task', async (t) => {
  const sb = sandbox('own-kill');
  const { r, approval, job } = await waitingRun(t, sb);
  t.equal(jobOf(sb, job).state, 'waiting_approval');
  r.child.kill('SIGKILL');
  await r.exit;
  t.equal(jobOf(sb, job).state, 'waiting_approval', 'nothing settled it yet: the process could not');
  await afterDeath(t, sb, approval, job);
});

for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
  t.test(`${signal} of run cancels its task before it exits`, async (t) => {
    const sb = sandbox('own-term');
    const { r, approval, job } = await waitingRun(t, sb);
    r.child.kill(signal);
    const { code } = await r.exit;
    t.equal(code, 130, 'it ends as cancelled, by itself');
    const seen = jobOf(sb, job);
    t.equal(seen.state, 'cancelled', 'settled by the run itself');
    t.notOk(seen.kinds.includes('owner_gone'), 'not left for a reaper');
    await afterDeath(t, sb, approval, job, false);
  });
}

t.test('a SIGKILLed (or SIGTERMed) mcp serve: its pending test job is settled by the next command, and stays refused', async (t) => {
  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    const sb = sandbox('own-serve');
    await cli(sb, ['--project', sb.project, 'trust']);
    const peer = await connect(sb, 'v1', ['--allow-write']);
    const sub = (await peer.callTool({ name: 'shadow_test', arguments: { command: ['sh', '-c', 'echo ran > ran.txt'] } })).structuredContent as any;
    t.equal(sub.state, 'waiting_approval');
    const pid = Number(((await peer.callTool({ name: 'shadow_status', arguments: {} })).structuredContent as any).connection.owner.split(':')[1]);
    process.kill(pid, signal);
    await until(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
    await peer.close().catch(() => {});
    // SIGTERM ends the server as end of input does (it cancels its own jobs); SIGKILL leaves them to the next open.
    await afterDeath(t, sb, sub.approval.id, sub.job_id, signal === 'SIGKILL');
  }
});

t.test("a SIGKILLed run's coding-CLI temp dir is removed by the next open; SIGTERM removes it itself", async (t) => {
  const claude = join(FIXTURES, 'fake-claude.mjs');
  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    const sb = sandbox('own-dir');
    await cli(sb, ['--project', sb.project, 'trust']);
    await cli(sb, ['model', 'add', 'cc', '--provider', 'claude-code', '--command', claude, '--arg', '--fake-scenario', '--arg', 'bash']);
    const tmp = sb.env.TMPDIR as string;
    const dirs = () => readdirSync(tmp).filter((n) => n.startsWith('shadowcode-run-'));
    const r = runCli(sb, ['run', '--level', 'workspace', 'run something']);
    t.teardown(() => r.child.kill('SIGKILL'));
    await until(() => /approvals approve (appr_\w+)/.test(r.err()), 20000);
    const approval = /approvals approve (appr_\w+)/.exec(r.err())![1]!;
    const job = approvalJob(sb, approval);
    t.matchOnly(dirs(), [new RegExp(`^shadowcode-run-${r.child.pid}-`)], 'the run has its temp dir, named by its process, and there is no other');
    r.child.kill(signal);
    await r.exit;
    if (signal === 'SIGKILL') t.equal(dirs().length, 1, 'a killed run cannot remove it');
    else t.same(dirs(), [], 'SIGTERM: removed by the run itself');
    const list = await spawnCli(sb, ['--project', sb.project, 'approvals']);
    t.equal(list.code, 0, list.stderr);
    t.same(dirs(), [], 'gone after the next open');
    t.equal(jobOf(sb, job).state, 'cancelled');
  }
});

t.test('the sweep removes only run dirs of gone processes that are real directories of this user', async (t) => {
  const sb = sandbox('own-sweep');
  const tmp = sb.env.TMPDIR as string;
  // Any process that has exited leaves the pid of a gone process: the cheapest one will do.
  const gone = spawn('true');
  await new Promise((r) => gone.on('close', r));
  mkdirSync(join(tmp, `shadowcode-run-${gone.pid}-aaaaaa`));
  mkdirSync(join(tmp, `shadowcode-run-${process.pid}-bbbbbb`));
  mkdirSync(join(sb.root, 'elsewhere'));
  symlinkSync(join(sb.root, 'elsewhere'), join(tmp, `shadowcode-run-${gone.pid}-link`));
  const r = await spawnCli(sb, ['--project', sb.project, 'approvals']);
  t.equal(r.code, 0, r.stderr);
  t.same(readdirSync(tmp).sort(), [`shadowcode-run-${gone.pid}-link`, `shadowcode-run-${process.pid}-bbbbbb`].sort(), "a live process's dir and a link stay");
  t.ok(existsSync(join(sb.root, 'elsewhere')), 'nothing is followed through a link');
});
