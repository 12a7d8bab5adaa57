/*
 * shadowcode test: run the project's test command as an owned job, without a
 * model. The person at the terminal is the approver: they confirm the exact
 * command (or pass --yes), and its output streams here as it runs. What the run
 * changed in the project is recorded on the job (engine/change-watch.ts) and named
 * in the summary: shadowcode review JOB shows it, rollback JOB undoes it.
 */
import { randomBytes } from 'node:crypto';
import type { OwnerSpec } from '../../engine/engine-submit.js';
import { singleTestCommand } from '../../engine/detect-tests.js';
import { decideApproval } from '../../engine/approvals.js';
import { getJob, jobEvents } from '../../engine/job-events.js';
import { EXIT, ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { getProject } from '../../store/projects.js';
import { encodeCursor } from '../../util/cursor.js';
import { openEngine } from '../../ops/engine.js';
import type { CommandSpec } from '../spec.js';
import { blockText, type Discarded, type SandboxBlock, sandboxMark, sandboxSupport } from '../../engine/spawn/index.js';
import { inert } from '../../util/inert-text.js';
import { grantsWords } from '../output.js';
import { onStopSignal } from '../../util/stop-signals.js';

async function confirm(ctx: Parameters<CommandSpec['run']>[0], argv: string[], cwd: string): Promise<boolean> {
  const bare = sandboxSupport().level === 'none' ? ' unsandboxed, with your full access' : grantsWords(sandboxMark(ctx.db(), cwd, ctx.policy(), ctx.io.env.HOME).grants);
  ctx.io.stderr.write(`Run ${inert(JSON.stringify(argv))} in ${inert(cwd)}${bare}? [y/N] `);
  const answer = await new Promise<string>((resolve) => ctx.io.stdin.once('data', (d) => resolve(String(d))));
  ctx.io.stdin.pause();
  return /^y(es)?\s*$/i.test(answer);
}

/** Why a run that did not succeed ended, in words a person can act on. */
function whyFailed(argv: readonly string[], exit: ExitBody | undefined, state: string): string {
  if (exit?.error !== undefined) {
    if (/\bENOENT\b/.test(exit.error)) return `command not found: ${argv[0]}`;
    if (/\bEACCES\b/.test(exit.error)) return `permission denied: ${argv[0]} is not executable`;
    return `could not start ${argv[0]}: ${exit.error}`;
  }
  if (state === 'cancelled' || exit?.cancelled) return 'cancelled before it finished';
  if (exit?.signal) return `killed by ${exit.signal}`;
  if (typeof exit?.code === 'number') return `exited ${exit.code}`;
  return 'ended without an exit status';
}

interface ExitBody {
  code?: number | null;
  signal?: string | null;
  cancelled?: boolean;
  error?: string;
}

/** Keeps the last `cap` bytes of the output, cut at a character boundary. */
class Tail {
  private text = '';
  truncated = false;
  constructor(private readonly cap: number) {}
  add(chunk: string): void {
    this.text += chunk;
    const bytes = Buffer.from(this.text);
    if (bytes.length > this.cap) {
      this.truncated = true;
      this.text = bytes.subarray(bytes.length - this.cap).toString('utf8').replace(/^\uFFFD+/, '');
    }
  }
  toString(): string {
    return this.text;
  }
}

export const command: CommandSpec = {
  name: 'test',
  summary: "Run the project's test command as an approved job",
  description:
    "Run a test command in the project directory as a job with its own process group and a sanitised environment. With no COMMAND the project must declare exactly one. You approve the exact command: at the prompt, or with --yes (needed when stdin is not a terminal). Exits 0 when the command succeeded and 1 when it failed, could not start or was cancelled (its own status is in the summary and in --json as job.exit_code, with the reason and the tail of its output; when it failed on a path the sandbox hid or showed read-only, the summary names the path and the sandbox allow command that would show it, and --json has them as sandbox_blocked); 3 when the policy refused to run it, e.g. in a project that is not trusted. What the run changed in the project is recorded on its job and named in the summary (--json: changed_files): shadowcode review JOB shows the diff, shadowcode rollback JOB undoes it. Ctrl-C, SIGTERM and SIGHUP (the terminal closed) cancel the job and wait until its process group is gone.",
  options: [{ name: 'yes', type: 'boolean', description: 'approve the exact command without asking' }],
  args: [{ name: 'COMMAND', required: false, variadic: true, description: 'the literal argv, after --' }],
  examples: ['shadowcode --project ~/src/app test', 'shadowcode --project ~/src/app test --yes -- npm run test:unit'],
  workspace: 'required',
  async run(ctx, { args, options }) {
    const project = ctx.requireWorkspace('test');
    let argv = [...args];
    if (argv.length === 0) argv = [...singleTestCommand(project, ctx.policy().limits.files).argv];
    if (options.yes !== true) {
      // Without a terminal nobody can answer the prompt: that is a usage error, not a refusal.
      if (!ctx.io.stdin.isTTY) throw new ScError('SC_APPROVAL_REQUIRED', `stdin is not a terminal, so nobody can approve ${JSON.stringify(argv)} at a prompt; pass --yes to approve it`);
      if (!(await confirm(ctx, argv, project))) throw new ScError('SC_APPROVAL_REQUIRED', `not approved: ${JSON.stringify(argv)}; nothing ran (answer y, or pass --yes)`);
    }
    // The shared engine's queue when one runs; this invocation owns the job either way, so ^C cancels it.
    const engine = await openEngine(ctx.ops, { kind: 'cli', owner: 'cli' });
    const owner: OwnerSpec = { label: `cli:${process.pid}:${randomBytes(4).toString('hex')}`, transport: 'cli', project };
    const tail = new Tail(ctx.policy().limits.cli.output_tail_bytes);
    let exit: ExitBody | undefined;
    let refusal: { message: string; code?: string; decision_id?: string } | undefined;
    const changed = new Map<string, string>();
    const blocked: SandboxBlock[] = [];
    let discarded: (Discarded & { notice: string }) | undefined;
    // Ctrl-C, a kill, the terminal closing: the job is cancelled and this waits for its cleanup
    // (its process group, the sandbox's placeholders) instead of dying with it half done.
    let jobId: string | undefined;
    let interrupted = false;
    const offSignals = onStopSignal(() => {
      interrupted = true;
      if (jobId) void engine.cancelJob(owner, jobId).catch(() => {});
    });
    try {
      // A refusal, at submission or when the job is about to run, says which rule and what to do about it.
      const refused = (message: string, detail: Record<string, unknown> | undefined): ScError => {
        const trusted = getProject(engine.db(), project).trusted;
        return new ScError('SC_POLICY_DENIED', `${JSON.stringify(argv)} did not run: ${message}${trusted ? '' : `; trust the project first: shadowcode --project ${project} trust`}`, detail);
      };
      const { job, approval } = await enforce({ policy: engine.policy, db: () => engine.db(), homes: ctx.homes() }, ctx.request('cli:test', { requested_level: 'workspace', args: { argv } }), (t) =>
        engine.submitJob(owner, { kind: 'test', argv, ceiling: t.ceiling === 'read_only' ? 'workspace' : t.ceiling, task_id: null }),
      ).catch((err: unknown) => {
        throw err instanceof ScError && err.code === 'SC_POLICY_DENIED' ? refused(err.message, err.detail) : err;
      });
      jobId = job.id;
      if (interrupted) void engine.cancelJob(owner, job.id).catch(() => {});
      if (!approval) throw new ScError('SC_INTERNAL', 'a test job was submitted without its approval');
      // The answer at the prompt (or --yes) is the CLI user's decision on this one approval: a gate decision, as approvals approve is.
      await enforce({ policy: engine.policy, db: () => engine.db() }, ctx.request('cli:approvals.approve', { resource: { kind: 'approval', id: approval.id, project }, args: { approval_id: approval.id } }), (t) =>
        decideApproval(t, engine.db(), approval.id, 'approved', 'cli'),
      );
      await engine.notifyDecision(approval.id, owner.label);
      let after: string | undefined;
      const drain = () => {
        for (;;) {
          const page = jobEvents(engine.db(), job.id, { limit: 500, ...(after ? { cursor: after } : {}) });
          for (const e of page.items) {
            const body = e.body as { text?: string; message?: string; code?: string; decision_id?: string } & ExitBody;
            if ((e.kind === 'stdout' || e.kind === 'stderr') && body.text !== undefined) {
              tail.add(body.text);
              if (!ctx.json) (e.kind === 'stderr' ? ctx.io.stderr : ctx.io.stdout).write(body.text);
            } else if (e.kind === 'exit') exit = body;
            else if (e.kind === 'sandbox_blocked') blocked.push(...((e.body as { blocks?: SandboxBlock[] }).blocks ?? []));
            else if (e.kind === 'sandbox_discarded') discarded = e.body as Discarded & { notice: string };
            else if (e.kind === 'files_changed') for (const c of (e.body as { changed?: Array<{ path: string; kind: string }> }).changed ?? []) changed.set(c.path, c.kind);
            else if (e.kind === 'error') refusal = { message: body.message ?? 'the job failed', ...(body.code ? { code: body.code } : {}), ...(body.decision_id ? { decision_id: body.decision_id } : {}) };
          }
          const last = page.items[page.items.length - 1];
          if (last) after = encodeCursor([last.seq]);
          if (!page.next_cursor) return;
        }
      };
      for (;;) {
        const cur = getJob(engine.db(), job.id);
        drain();
        if (cur && ['succeeded', 'failed', 'cancelled'].includes(cur.state)) {
          drain();
          if (refusal?.code === 'SC_POLICY_DENIED') throw refused(refusal.message, { job_id: cur.id, action: 'job:run', ...(refusal.decision_id ? { decision_id: refusal.decision_id } : {}) });
          const ok = cur.state === 'succeeded';
          const reason = ok ? undefined : refusal ? refusal.message : whyFailed(argv, exit, cur.state);
          const summary = ok
            ? `succeeded: ${inert(JSON.stringify(argv))} exited 0 after ${cur.duration_ms} ms (job ${cur.id})`
            : `${cur.state}: ${inert(JSON.stringify(argv))}: ${inert(reason ?? '')}${cur.duration_ms !== null ? ` after ${cur.duration_ms} ms` : ''} (job ${cur.id})`;
          const files = [...changed].map(([path, kind]) => ({ path, kind }));
          const data = { job: cur, passed: ok, ...(reason ? { reason } : {}), output_tail: tail.toString(), output_truncated: tail.truncated, changed_files: files, ...(blocked.length ? { sandbox_blocked: blocked } : {}), ...(discarded ? { discarded: { count: discarded.count, paths: discarded.paths, more: discarded.more } } : {}) };
          const note = `${files.length ? `\nit changed ${files.map((f) => `${inert(f.path)} (${f.kind})`).join(', ')}: see shadowcode --project ${project} review ${cur.id}` : ''}${blocked.length ? `\nit ran in the sandbox, which is why it failed here:\n${inert(blockText(blocked))}` : ''}${discarded ? `\nnote: ${inert(discarded.notice)}` : ''}`;
          // Our own status, never the command's: its 2, 3 or 4 would read as a usage error, a denial or a broken chain.
          return { data, text: `${summary}${note}`, exitCode: ok ? EXIT.ok : EXIT.error };
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      await engine.releaseOwner(owner.label);
      await engine.shutdown();
      offSignals();
    }
  },
};
