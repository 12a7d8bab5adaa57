/*
 * run_command: one literal argv in a project directory, after a person
 * approves exactly that argv and directory.
 *
 *   cwd confined to the project ─► the task's change watch observes (opened on the first
 *   command: engine/change-watch.ts) ─► ctx.requestApproval('command', {argv, cwd,
 *   changed_files, runs_changed, notice}) (waits; every file this task changed, by any
 *   means, and which of them the command runs, with their diffs)
 *   ─► approved ─► gate 'job:run' ─► job supervisor: own process group, policy env,
 *   output to job events (capped at jobs.output_bytes), stopped on cancel, on
 *   agent.command_timeout_ms, and with the engine if it dies (the sandbox, or the supervisor)
 *   ─► the watch observes again: what the command changed is a change of the task
 *   ─► exit status and output (and the files it changed) back to the model
 *   ─► a protected path it created where the sandbox could hold nothing (a new nested
 *   repository) ─► a `protected_created` event
 *   ─► it failed on a path the sandbox hid or showed read-only ─► a `sandbox_blocked` event, and
 *   the words and the `sandbox allow` fix at the end of what the model gets back
 */
import { statSync } from 'node:fs';
import { betweenCause, observeJob, type ObservedChange } from '../../engine/change-watch.js';
import { childEnv } from '../../engine/child-env.js';
import { commandContext } from '../../engine/command-context.js';
import { sandboxMark } from '../../engine/jobs.js';
import { discardedEvent, protectedCreatedEvent, runCommand, sandboxBlockedEvent } from '../../engine/process.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { jobRunRequest } from '../../policy/requests.js';
import { ScrubStream } from '../../policy/scrub.js';
import { getProject } from '../../store/projects.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { confinedPath } from '../../util/confine.js';
import { fail, type NativeTool, ok, type ToolEnv } from './types.js';

interface Args {
  argv: string[];
  cwd?: string;
}

export const runCommandTool: NativeTool<Args> = {
  name: 'run_command',
  writes: true,
  describe: (a) => ({ argv: a.argv, cwd: a.cwd ?? '.' }),
  async run(env: ToolEnv, a: Args, ticket: GateTicket) {
    assertTicket(ticket, 'task:tool.run_command');
    const { ctx } = env;
    const cwd = confinedPath(ctx.project, a.cwd ?? '.', { mustExist: true });
    if (!statSync(cwd).isDirectory()) throw new ScError('SC_FILE_NOT_FOUND', `${a.cwd} is not a directory`);
    const job = { id: ctx.jobId, owner: ctx.owner, project: ctx.project, ceiling: ctx.ceiling };
    const watch = { id: ctx.jobId, jobId: ctx.jobId, project: ctx.project };
    // What changed since the last look (a background process, anything else) is the task's before the approval lists it.
    observeJob(env.gate, job, watch, betweenCause(env.db(), ctx.jobId), { emit: ctx.emit });
    const action = commandContext(env.db(), ctx.project, ctx.jobId, a.argv, cwd, env.policy.limits.agent.read_bytes, env.policy);
    const outcome = await ctx.requestApproval('command', { ...action, ...sandboxMark(env.db(), ctx.project, env.policy, env.env.HOME) });
    if (outcome !== 'approved') return fail('SC_APPROVAL_DENIED', `${JSON.stringify(a.argv)} in ${cwd} was ${outcome} and did not run`);
    // What changed while the approval waited is not the command's.
    observeJob(env.gate, job, watch, betweenCause(env.db(), ctx.jobId), { emit: ctx.emit });
    const limits = env.policy.limits;
    const req = jobRunRequest(ctx, env.trust(), ctx.jobId, { argv: a.argv, cwd });
    const out = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    let captured = 0;
    let timedOut = false;
    // The events are scrubbed per stream, so a secret split across two reads of the pipe is still caught.
    const scrubbers = { stdout: new ScrubStream(), stderr: new ScrubStream() };
    const flush = () => {
      for (const stream of ['stdout', 'stderr'] as const) {
        const rest = scrubbers[stream].end();
        if (rest) ctx.emit(stream, { text: rest });
      }
    };
    let changed: readonly ObservedChange[] = [];
    const result = await enforce(env.gate, req, async (jobTicket) => {
      const db = env.gate.db();
      const network = getProject(db, ctx.project).network;
      const handle = runCommand(jobTicket, { argv: a.argv, cwd, env: childEnv(env.policy.environment, env.env), graceMs: limits.ownership.kill_grace_ms, project: ctx.project, network, policy: env.policy, db }, (stream, chunk) => {
        if (captured >= limits.jobs.output_bytes) return;
        const part = chunk.subarray(0, limits.jobs.output_bytes - captured);
        captured += part.length;
        out[stream].push(part);
        const text = scrubbers[stream].push(part.toString('utf8'));
        if (text) ctx.emit(stream, { text });
        if (captured >= limits.jobs.output_bytes) {
          flush();
          ctx.emit('output_truncated', { after_bytes: limits.jobs.output_bytes });
        }
      });
      const stop = () => handle.cancel();
      ctx.signal.addEventListener('abort', stop, { once: true });
      const timer = setTimeout(() => {
        timedOut = true;
        handle.cancel();
      }, limits.agent.command_timeout_ms);
      try {
        return await handle.done;
      } finally {
        clearTimeout(timer);
        ctx.signal.removeEventListener('abort', stop);
      }
    }).finally(() => {
      try {
        changed = observeJob(env.gate, job, watch, { via: 'command', why: `changed by the approved command ${JSON.stringify(a.argv)}` }, { emit: ctx.emit }).changes;
      } catch (err) {
        // Not lost: the next look (the next approval, the task's end) compares against what was seen last.
        ctx.emit('changes_unobserved', { reason: (err as Error).message });
      }
    });
    flush();
    ctx.emit('exit', { ...result, argv: a.argv, cwd });
    const created = protectedCreatedEvent(result.protected_created);
    if (created) ctx.emit('protected_created', created);
    const blocked = sandboxBlockedEvent(result.sandbox_blocked);
    if (blocked) ctx.emit('sandbox_blocked', blocked);
    const lost = discardedEvent(result.discarded, ctx.project);
    if (lost) ctx.emit('sandbox_discarded', { ...lost });
    const how = timedOut ? `was stopped after ${limits.agent.command_timeout_ms} ms` : result.cancelled ? 'was cancelled' : result.error ? `could not start: ${result.error}` : result.signal ? `ended by ${result.signal}` : `exited ${result.code}`;
    const text = (b: Buffer[]) => Buffer.concat(b).toString('utf8');
    const files = changed.length ? `\nIt changed ${changed.map((c) => `${c.path} (${c.kind})`).join(', ')}; these are changes of this task, reviewed and rolled back with the rest.` : '';
    const body = `${JSON.stringify(a.argv)} ${how} after ${result.duration_ms} ms.${files}\n--- stdout ---\n${text(out.stdout)}\n--- stderr ---\n${text(out.stderr)}${captured >= limits.jobs.output_bytes ? `\n[output cut at ${limits.jobs.output_bytes} bytes]` : ''}${blocked ? `\n--- sandbox ---\nIt ran in a sandbox, which is why it failed here; the user can change that:\n${blocked.notice}` : ''}${lost ? `\n--- sandbox ---\n${lost.notice}` : ''}`;
    return result.code === 0 ? ok(body) : { content: body, is_error: true };
  },
};
