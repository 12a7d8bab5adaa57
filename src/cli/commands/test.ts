/*
 * shadowcode test: run the project's test command as an owned job, without a
 * model. The person at the terminal is the approver: they confirm the exact
 * command (or pass --yes), and its output streams here as it runs.
 */
import { randomBytes } from 'node:crypto';
import type { OwnerSpec } from '../../engine/engine-submit.js';
import { singleTestCommand } from '../../engine/detect-tests.js';
import { decideApproval, getJob, jobEvents } from '../../engine/jobs.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { encodeCursor } from '../../util/cursor.js';
import { openEngine } from '../engine.js';
import type { CommandSpec } from '../spec.js';

async function confirm(ctx: Parameters<CommandSpec['run']>[0], argv: string[], cwd: string): Promise<boolean> {
  if (!ctx.io.stdin.isTTY) return false;
  ctx.io.stderr.write(`Run ${JSON.stringify(argv)} in ${cwd}? [y/N] `);
  const answer = await new Promise<string>((resolve) => ctx.io.stdin.once('data', (d) => resolve(String(d))));
  ctx.io.stdin.pause();
  return /^y(es)?\s*$/i.test(answer);
}

export const command: CommandSpec = {
  name: 'test',
  summary: "Run the project's test command as an approved job",
  description:
    'Run a test command in the project directory as a job with its own process group and a sanitised environment. With no COMMAND the project must declare exactly one. You approve the exact command: at the prompt, or with --yes. Exits with the command\'s status.',
  options: [{ name: 'yes', type: 'boolean', description: 'approve the exact command without asking' }],
  args: [{ name: 'COMMAND', required: false, variadic: true, description: 'the literal argv, after --' }],
  examples: ['shadowcode --workspace ~/src/app test', 'shadowcode --workspace ~/src/app test --yes -- npm run test:unit'],
  workspace: 'required',
  async run(ctx, { args, options }) {
    const project = ctx.requireWorkspace('test');
    let argv = [...args];
    if (argv.length === 0) argv = [...singleTestCommand(project, ctx.policy().limits.files).argv];
    if (options.yes !== true && !(await confirm(ctx, argv, project))) throw new ScError('SC_APPROVAL_REQUIRED', `not approved: ${JSON.stringify(argv)}; re-run with --yes to approve it`);
    // The shared engine's queue when one runs; this invocation owns the job either way, so ^C cancels it.
    const engine = await openEngine(ctx, { kind: 'cli', owner: 'cli' });
    const owner: OwnerSpec = { label: `cli:${process.pid}:${randomBytes(4).toString('hex')}`, transport: 'cli', project };
    try {
      const { job, approval } = await enforce({ policy: engine.policy, db: () => engine.db() }, ctx.request('cli:test', { requested_level: 'workspace', args: { argv } }), (t) =>
        engine.submitJob(owner, { kind: 'test', argv, ceiling: t.ceiling === 'read_only' ? 'workspace' : t.ceiling, task_id: null }),
      );
      if (!approval) throw new ScError('SC_INTERNAL', 'a test job was submitted without its approval');
      decideApproval(engine.db(), approval.id, 'approved', 'cli');
      await engine.notifyDecision(approval.id, owner.label);
      let after: string | undefined;
      const drain = () => {
        for (;;) {
          const page = jobEvents(engine.db(), job.id, { limit: 500, ...(after ? { cursor: after } : {}) });
          for (const e of page.items) {
            const text = (e.body as { text?: string }).text;
            if (!ctx.json && text !== undefined) (e.kind === 'stderr' ? ctx.io.stderr : ctx.io.stdout).write(text);
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
          const summary = `${cur.state}: ${JSON.stringify(argv)} exited ${cur.exit_code} after ${cur.duration_ms} ms (job ${cur.id})`;
          const exitCode = cur.state === 'succeeded' ? 0 : typeof cur.exit_code === 'number' && cur.exit_code > 0 ? Math.min(cur.exit_code, 125) : 1;
          return { data: { job: cur }, text: ctx.json ? '' : summary, exitCode };
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      await engine.releaseOwner(owner.label);
      await engine.shutdown();
    }
  },
};
