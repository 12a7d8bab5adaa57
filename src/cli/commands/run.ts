/*
 * shadowcode run "PROMPT": a task for the model, followed live in the terminal.
 *
 *   gate cli:run (requested level = --level) ─► jobs.submitAgent (owner cli:<pid>)
 *   ─► follow the job's events: a status line (step, current tool, tokens, elapsed);
 *      each pending approval shown exactly (argv and directory; a write as its diff) and asked
 *      y/N at the terminal, each prompt reading its own answer
 *   ─► the final answer, how many actions were refused, and the commands that review,
 *      explain and roll back what it changed; exit 0 when it succeeded
 *
 * A build task at read_only can change nothing; it says so when it starts.
 *
 * --json prints each event as one JSON line on stdout instead. Ctrl-C, SIGTERM and
 * SIGHUP cancel the task and wait for its cleanup (the command's process group, the
 * runner's temp dir) before exiting.
 *
 * --detach: the task goes to the shared engine owned by no connection, and this
 * returns with its id at once; it runs until it ends, is cancelled or the engine stops.
 */
import { attachAgentRuntime, resolveModelEntry } from '../../agent/task.js';
import { randomBytes } from 'node:crypto';
import type { Engine } from '../../engine/engine.js';
import type { OwnerSpec } from '../../engine/engine-submit.js';
import { decideApproval, getApproval, getJob, jobAnswer, jobEvents, type JobRow } from '../../engine/jobs.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import type { Level } from '../../ticket.js';
import { encodeCursor } from '../../util/cursor.js';
import type { Ctx } from '../context.js';
import { openEngine } from '../../ops/engine.js';
import { ask } from '../ask.js';
import { changePreview } from '../change-preview.js';
import { approvalDetails, describeAction } from '../output.js';
import { eraseLine, rawStream } from '../terminal.js';
import { inert, inertBlock } from '../../util/inert-text.js';
import { nextStopSignal, onStopSignal } from '../../util/stop-signals.js';
import type { CommandSpec, Output } from '../spec.js';

const ENDED = ['succeeded', 'failed', 'cancelled'];

/** A tool result the policy or a person refused: the action did not happen. */
const REFUSED = /^SC_(POLICY_DENIED|APPROVAL_DENIED)\b/;


export const command: CommandSpec = {
  name: 'run',
  summary: 'Start a task for a model or runner and follow it live',
  description:
    'Start a task for a configured model or runner in the selected project and follow it: the step, the current tool, tokens and elapsed time, and a y/N prompt for each command it wants to run, showing the exact argv and directory. --level defaults to read_only, so a build task that should change files or run commands needs --level workspace in a project trusted at that level. --json prints each job event as one JSON line. Ctrl-C cancels the task and waits for its cleanup. Without a terminal, approve from another shell with shadowcode approvals approve ID.',
  options: [
    { name: 'mode', type: 'string', value: 'MODE', choices: ['plan', 'review', 'build'], default: 'build', description: 'plan: read and record a plan; review: read and report; build: change and verify' },
    { name: 'model', type: 'string', value: 'ID', description: 'a configured model or runner (shadowcode model list); default the default one' },
    { name: 'level', type: 'string', value: 'LEVEL', choices: ['read_only', 'workspace', 'elevated'], default: 'read_only', description: "the level this task asks for; its ceiling, what it may really do, is the lower of this and the project's trust level" },
    { name: 'detach', type: 'boolean', description: 'hand the task to the shared engine (shadowcode engine start) and return at once; it outlives this command' },
  ],
  args: [{ name: 'PROMPT', required: true, variadic: true, description: 'the task, in plain words' }],
  examples: [
    'shadowcode --project ~/src/app run --mode plan "add a --verbose flag"',
    'shadowcode --project ~/src/app run --level workspace "add a --verbose flag and run the tests"',
    'shadowcode --project ~/src/app --json run --mode review "check error handling in src/io"',
  ],
  workspace: 'required',
  telemetry: ({ options }) => (options.detach === true ? null : 'run'),
  async run(ctx, { args, options }) {
    const project = ctx.requireWorkspace('run');
    const prompt = args.join(' ').trim();
    if (!prompt) throw new ScError('SC_USAGE', 'run needs a PROMPT, e.g. shadowcode --project . run "fix the failing test"');
    const mode = (options.mode as 'plan' | 'review' | 'build' | undefined) ?? 'build';
    const level = (options.level as Level | undefined) ?? 'read_only';
    // The shared engine's queue when one runs; this invocation owns the task either way, so ^C cancels it.
    const engine = await openEngine(ctx.ops, { kind: 'cli', owner: 'cli' });
    if (options.detach === true) return detached(ctx, engine, project, prompt, mode, level, options.model as string | undefined);
    const owner: OwnerSpec = { label: `cli:${process.pid}:${randomBytes(4).toString('hex')}`, transport: 'cli', project };
    let job: JobRow | undefined;
    let interrupted = false;
    // Ctrl-C, and a terminal closing or a kill: the task is settled and cleaned up, not left behind.
    const interrupt = () => {
      interrupted = true;
      if (job) void engine.cancelJob(owner, job.id);
    };
    const offSignals = onStopSignal(interrupt);
    try {
      const entry = resolveModelEntry(engine.freshSettings(), options.model as string | undefined);
      attachAgentRuntime(engine);
      ({ job } = await enforce({ policy: engine.policy, db: () => engine.db(), homes: ctx.homes() }, ctx.request('cli:run', { requested_level: level, args: { mode, model: entry.id, level } }), (t) =>
        engine.submitJob(owner, { kind: 'agent', prompt, mode, model_id: entry.id, ceiling: mode === 'build' ? t.ceiling : 'read_only' }),
      ));
      const id = job.id;
      if (interrupted) void engine.cancelJob(owner, id);
      const started = Date.now();
      const tty = rawStream(ctx.io.stderr) === process.stderr && process.stderr.isTTY === true;
      // The status line is redrawn in place: our own cursor control, written under the guard that escapes everyone else's.
      const clear = () => {
        if (tty) eraseLine(ctx.io.stderr);
      };
      const view = { step: 0, tool: '', tokens: 0 };
      const status = () => {
        if (!tty || ctx.json) return;
        clear();
        ctx.io.stderr.write(`[${id}] step ${view.step} · ${view.tool ? inert(view.tool) : 'thinking'} · ${view.tokens} tokens · ${Math.round((Date.now() - started) / 1000)}s`);
      };
      const line = (text: string) => {
        if (ctx.json) return;
        clear();
        ctx.io.stderr.write(`${text}\n`);
        status();
      };
      line(`task ${id} (${mode}, model ${entry.id}, ceiling ${job.ceiling}) started; Ctrl-C cancels it`);
      if (mode === 'build' && job.ceiling === 'read_only') {
        line(`note: at level read_only this task cannot change anything: its writes and commands will be refused. To let it, run with --level workspace in a project trusted at that level (shadowcode trust --level workspace).`);
      }
      let refused = 0;
      let after: string | undefined;
      for (;;) {
        const page = jobEvents(engine.db(), id, { limit: 500, ...(after ? { cursor: after } : {}) });
        for (const e of page.items) {
          const body = e.body as Record<string, any>;
          if (ctx.json) ctx.io.stdout.write(`${JSON.stringify({ job_id: id, seq: e.seq, at: e.at, kind: e.kind, body })}\n`);
          // Native tasks number their model requests; coding-CLI runners number their answers and tool calls.
          if (typeof body.step === 'number' && body.step > view.step) view.step = body.step;
          if (e.kind === 'tool_result' && body.is_error && typeof body.content === 'string' && REFUSED.test(body.content)) refused++;
          if (e.kind === 'model_response' && body.usage) view.tokens += (body.usage.input_tokens ?? 0) + (body.usage.output_tokens ?? 0);
          else if (e.kind === 'tool_call') {
            view.tool = body.name;
            line(`step ${body.step}: ${inert(body.name)}`);
          } else if (e.kind === 'checkpoint') line(`  changed ${inert(body.path)} (checkpoint ${body.checkpoint_id})`);
          else if (e.kind === 'runner.state_changed' || e.kind === 'protected_created' || e.kind === 'background_unwatched') line(`WARNING: ${inert(body.notice)}`);
          else if (e.kind === 'changes_limited' || e.kind === 'changes_unobserved') line(`${body.incomplete || e.kind === 'changes_unobserved' ? 'WARNING' : 'note'}: not every change of this task is recorded: ${inert(body.reason)}`);
          else if (e.kind === 'sandbox_blocked') line(inert(body.notice));
          else if (e.kind === 'sandbox_discarded' || e.kind === 'mcp.discarded') line(`note: ${inert(body.notice)}`);
          else if (e.kind === 'mcp.stderr' && Array.isArray(body.lines)) line(`server ${inert(String(body.definition))} failed (${inert(String(body.code))}); its stderr, last lines (secrets scrubbed):\n${body.lines.map((l: unknown) => `  ${inert(String(l))}`).join('\n')}${body.hint ? `\nhint: ${inert(String(body.hint))}` : ''}`);
          else if (e.kind === 'approval_requested') {
            // The stored record, not the event: the event's copy is cut to the event text limit, and a diff must be shown whole.
            const stored = getApproval(engine.db(), body.approval_id);
            const action = (stored?.action ?? body.action) as Record<string, unknown>;
            const what = describeAction(body.kind, action);
            // A command's changed files and warning, or a protected file's complete diff; a coding CLI's write is previewed from its input.
            const details = approvalDetails(body.kind, action);
            // The lines under the action, none blank and none stray: the details, or a coding CLI's write previewed.
            const preview = details === '' && body.kind === 'write' ? inertBlock(changePreview(project, action, engine.policy.limits.cli.output_tail_bytes)).replace(/\n+$/, '') : '';
            const below = details !== '' ? details : preview !== '' ? `  the change:\n${preview}` : '';
            if (ctx.io.stdin.isTTY) {
              clear();
              const shown = details !== '' ? details : preview;
              const yes = await ask(ctx, `The task asks to ${what}.\n${shown ? `${shown}\n` : ''}Approve? [y/N] `);
              try {
                // The answer at the prompt is the CLI user's decision: a gate decision with its audit row, as approvals approve is.
                const verb = yes ? 'approve' : 'deny';
                await enforce(ctx.gate(), ctx.request(`cli:approvals.${verb}`, { resource: { kind: 'approval', id: body.approval_id, project }, args: { approval_id: body.approval_id } }), (t) =>
                  decideApproval(t, engine.db(), body.approval_id, yes ? 'approved' : 'denied', 'cli'),
                );
              } catch (err) {
                if (!(err instanceof ScError && err.code === 'SC_APPROVAL_NOT_PENDING')) throw err;
              }
              await engine.notifyDecision(body.approval_id, owner.label);
            } else {
              const how = `approve with: shadowcode --project ${project} approvals approve ${body.approval_id} (or deny)`;
              line(below ? `The task asks to ${what}\n${below}\n${how}` : `The task asks to ${what}; ${how}`);
            }
          }
          status();
        }
        const last = page.items[page.items.length - 1];
        if (last) after = encodeCursor([last.seq]);
        if (page.next_cursor) continue;
        const cur = getJob(engine.db(), id) as JobRow;
        if (ENDED.includes(cur.state) && jobAnswer(engine.db(), id) !== null) {
          const more = jobEvents(engine.db(), id, { limit: 1, ...(after ? { cursor: after } : {}) });
          if (more.items.length) continue;
          const answer = jobAnswer(engine.db(), id) as { state: string; summary: string | null; reason: { code: string; message: string } | null; usage: unknown; steps: number | null };
          if (!ctx.json) clear();
          // The model's answer keeps its lines; a reason is one line.
          const text = typeof answer.summary === 'string' ? inertBlock(answer.summary) : answer.reason ? `${cur.state}: ${inert(answer.reason.message)} [${answer.reason.code}]` : cur.state;
          const changed = [...new Set(jobEvents(engine.db(), id, { limit: 10000 }).items.filter((e) => e.kind === 'checkpoint').map((e) => (e.body as { path: string }).path))];
          const sc = `shadowcode --project ${project}`;
          const after2 = changed.length ? `; changed ${changed.map(inert).join(', ')}\n  the diff: ${sc} review ${id}\n  undo it:  ${sc} rollback ${id}\n  a file's history: ${sc} why PATH` : '';
          const denied = refused ? `; ${refused} action${refused === 1 ? ' was' : 's were'} refused${job.ceiling === 'read_only' && mode === 'build' ? ' at ceiling read_only' : ''}` : '';
          return { data: { job: cur, answer, changed, refused }, text: `${text}\n(${cur.state}, task ${id}${denied}${after2})`, exitCode: cur.state === 'succeeded' ? 0 : cur.state === 'cancelled' ? 130 : 1, streamed: true };
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      // Held, not acted on, while the engine shuts down (it stops the task's background
      // processes): a signal then must not end the process with their placeholders left behind.
      const held = nextStopSignal();
      offSignals();
      try {
        await engine.shutdown();
      } finally {
        held.off();
      }
    }
  },
};

/** run --detach: owned by no connection, so only the shared engine can keep it once this command exits. */
async function detached(ctx: Ctx, engine: Engine, project: string, prompt: string, mode: 'plan' | 'review' | 'build', level: Level, model: string | undefined): Promise<Output> {
  try {
    if (engine.mode !== 'shared') throw new ScError('SC_ENGINE_NOT_RUNNING', 'run --detach needs the shared engine, which outlives this command: start it with shadowcode engine start, then run this again');
    const entry = resolveModelEntry(engine.freshSettings(), model);
    const { job } = await enforce({ policy: engine.policy, db: () => engine.db(), homes: ctx.homes() }, ctx.request('cli:run', { requested_level: level, args: { mode, model: entry.id, level } }), (t) =>
      engine.submitDetached(project, { kind: 'agent', prompt, mode, model_id: entry.id, ceiling: mode === 'build' ? t.ceiling : 'read_only' }),
    );
    return {
      data: { job, engine: { pid: engine.sharedPid } },
      text: `task ${job.id} (${mode}, model ${entry.id}, ceiling ${job.ceiling}) handed to the shared engine (pid ${engine.sharedPid}); it runs after this command exits.
follow it: shadowcode --project ${project} jobs; its approvals: shadowcode --project ${project} approvals`,
    };
  } finally {
    await engine.shutdown();
  }
}
