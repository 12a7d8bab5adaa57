// The native task tools, called by a scripted model through the loop and the
// gate: confinement, .gitignore, exact edits with a useful miss, checkpointed
// writes, and run_command's exact approval and real process.
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { closestStart } from '../../src/agent/tools/edit-file.js';
import type { Message } from '../../src/agent/types.js';
import { getJob, pendingApprovals } from '../../src/engine/jobs.js';
import { agentBench, scripted, type ScriptedStep } from '../fixtures/agent.js';
import { decideAsCli } from '../fixtures/decide.js';
import { until } from '../fixtures/env.js';

/** Runs one task whose model makes these calls, one per step, then finishes; returns each call's result. */
async function calls(t: any, steps: ScriptedStep['calls'][], setup: (project: string) => void, o: { ceiling?: 'read_only' | 'workspace' } = {}) {
  const model = scripted([...steps.map((c) => ({ calls: c })), { calls: [{ name: 'finish', arguments: { summary: 'ok' } }] }]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  setup(b.sb.project);
  const job = b.submit('tools', { ceiling: o.ceiling ?? 'workspace' });
  await b.settle(job.id);
  const last = model.requests.at(-1)!.messages.filter((m) => m.role === 'tool') as Array<Extract<Message, { role: 'tool' }>>;
  return { results: last, b, job };
}

t.test('read_file returns a line range, numbered, and says more follows', async (t) => {
  const { results } = await calls(t, [[{ name: 'read_file', arguments: { path: 'f.txt', start_line: 2, end_line: 3 } }]], (p) => writeFileSync(join(p, 'f.txt'), 'a\nb\nc\nd\n'));
  t.match(results[0]!.content, /^f\.txt lines 2-3 \(8 bytes\):\n2\tb\n3\tc\n\[more lines follow; read from start_line 4\]$/);
});

t.test('reads refuse a link out of the project, a path outside it and a FIFO', async (t) => {
  const { results } = await calls(
    t,
    [[{ name: 'read_file', arguments: { path: 'out' } }], [{ name: 'read_file', arguments: { path: '../secret' } }], [{ name: 'list_dir', arguments: { path: 'linkdir' } }]],
    (p) => {
      writeFileSync(join(p, '..', 'secret'), 'nope');
      symlinkSync(join(p, '..', 'secret'), join(p, 'out'));
      symlinkSync(join(p, '..'), join(p, 'linkdir'));
    },
  );
  t.match(results[0]!.content, /^SC_PATH_OUTSIDE/);
  t.match(results[1]!.content, /^SC_PATH_OUTSIDE/);
  t.match(results[2]!.content, /^SC_FILE_REFUSED/);
  t.notMatch(JSON.stringify(results), /nope/);
});

t.test('search_text finds literal and regex matches and skips what .gitignore ignores', async (t) => {
  const { results } = await calls(
    t,
    [[{ name: 'search_text', arguments: { pattern: 'needle' } }], [{ name: 'search_text', arguments: { pattern: 'ne+dle\\d', regex: true } }], [{ name: 'search_text', arguments: { pattern: '(a)\\1', regex: true } }], [{ name: 'search_text', arguments: { pattern: 'NEEDLE', ignore_case: true, path: 'src' } }]],
    (p) => {
      mkdirSync(join(p, 'src'));
      mkdirSync(join(p, 'build'));
      writeFileSync(join(p, '.gitignore'), 'build/\n*.log\n');
      writeFileSync(join(p, 'src', 'a.ts'), 'x\nconst needle1 = 1;\n');
      writeFileSync(join(p, 'build', 'out.js'), 'needle in build\n');
      writeFileSync(join(p, 'debug.log'), 'needle in log\n');
      writeFileSync(join(p, 'bin.dat'), Buffer.from([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0, 1]));
    },
  );
  t.match(results[0]!.content, /^1 matching line in \d+ files searched:\nsrc\/a\.ts:2: const needle1 = 1;$/);
  t.match(results[1]!.content, /src\/a\.ts:2:/);
  t.match(results[2]!.content, /^SC_TOOL_ARGS_INVALID: .*linear time/);
  t.match(results[3]!.content, /src\/a\.ts:2:/);
});

t.test('edit_file: a miss returns the closest region with line numbers, a repeat needs replace_all', async (t) => {
  const { results, b } = await calls(
    t,
    [
      [{ name: 'edit_file', arguments: { path: 'c.ts', old_text: 'function add(a, b) {\n  return a - b;\n}', new_text: 'x' } }],
      [{ name: 'edit_file', arguments: { path: 'c.ts', old_text: '2\tfunction add(a,b) {', new_text: 'x' } }],
      [{ name: 'edit_file', arguments: { path: 'c.ts', old_text: 'x', new_text: 'y' } }],
      [{ name: 'edit_file', arguments: { path: 'c.ts', old_text: 'x', new_text: 'y', replace_all: true } }],
    ],
    (p) => writeFileSync(join(p, 'c.ts'), '// calc\nfunction add(a,b) {\n  return a + b;\n}\nconst x = 1, x2 = x;\n'),
  );
  t.match(results[0]!.content, /^SC_EDIT_NO_MATCH: old_text was not found in c\.ts\. The closest region is lines 2-4:\n1\t\/\/ calc\n2\tfunction add\(a,b\) \{\n3\t  return a \+ b;\n4\t\}/);
  t.match(results[1]!.content, /line number and a tab, as read_file shows them/);
  t.match(results[2]!.content, /^SC_EDIT_AMBIGUOUS: old_text occurs 3 times in c\.ts \(at lines 5, 5, 5\)/);
  t.match(results[3]!.content, /^Edited c\.ts: 3 replacements/);
  t.equal(readFileSync(join(b.sb.project, 'c.ts'), 'utf8'), '// calc\nfunction add(a,b) {\n  return a + b;\n}\nconst y = 1, y2 = y;\n');
  t.same(closestStart(['a', 'b', 'c'], ['zzz']), { start: 1, score: 0 });
});

t.test('write_file creates missing parent directories inside the project, never outside it', async (t) => {
  const { results, b } = await calls(
    t,
    [[{ name: 'write_file', arguments: { path: 'deep/er/new.txt', content: 'hi' } }], [{ name: 'write_file', arguments: { path: '../escape.txt', content: 'x' } }], [{ name: 'write_file', arguments: { path: 'out/x.txt', content: 'x' } }]],
    (p) => symlinkSync(join(p, '..'), join(p, 'out')),
  );
  t.match(results[0]!.content, /^Created deep\/er\/new\.txt/);
  t.equal(readFileSync(join(b.sb.project, 'deep/er/new.txt'), 'utf8'), 'hi');
  t.match(results[1]!.content, /^SC_PATH_OUTSIDE/);
  t.match(results[2]!.content, /^SC_PATH_OUTSIDE/);
  t.notOk(existsSync(join(b.sb.root, 'escape.txt')));
  t.notOk(existsSync(join(b.sb.root, 'x.txt')));
});

t.test('run_command waits for approval of the exact argv and directory, then runs it for real', async (t) => {
  const model = scripted([{ calls: [{ name: 'run_command', arguments: { argv: ['sh', '-c', 'echo out; echo err >&2; exit 3'] } }] }, { calls: [{ name: 'run_command', arguments: { argv: ['touch', 'denied'] } }] }, { calls: [{ name: 'finish', arguments: { summary: 'ran' } }] }]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  const job = b.submit('run');
  const db = b.engine.db();
  await until(() => pendingApprovals(db, { project: b.sb.project, jobId: job.id }).length === 1);
  t.equal(getJob(db, job.id)?.state, 'waiting_approval', 'visible as waiting for approval');
  const [a] = pendingApprovals(db, { project: b.sb.project, jobId: job.id });
  t.same(a!.action, { argv: ['sh', '-c', 'echo out; echo err >&2; exit 3'], cwd: b.sb.project, changed_files: [], runs_changed: [], notice: null });
  t.equal(model.requests.length, 1, 'nothing more happens until it is decided');
  decideAsCli({ policy: b.engine.policy, db }, a!.id, 'approved');
  b.engine.jobs().sync();
  await until(() => pendingApprovals(db, { project: b.sb.project, jobId: job.id }).length === 1);
  const [d] = pendingApprovals(db, { project: b.sb.project, jobId: job.id });
  decideAsCli({ policy: b.engine.policy, db }, d!.id, 'denied');
  b.engine.jobs().sync();
  t.equal((await b.settle(job.id)).state, 'succeeded');
  const results = model.requests[2]!.messages.filter((m) => m.role === 'tool') as Array<Extract<Message, { role: 'tool' }>>;
  t.match(results[0]!.content, /exited 3 after \d+ ms\.\n--- stdout ---\nout\n\n--- stderr ---\nerr\n/);
  t.equal(results[0]!.is_error, true, 'a non-zero exit is an error result');
  t.match(results[1]!.content, /^SC_APPROVAL_DENIED: \["touch","denied"\] in .* was denied and did not run/);
  t.notOk(existsSync(join(b.sb.project, 'denied')));
  const kinds = b.events(job.id).map((e) => e.kind);
  for (const k of ['approval_requested', 'approval_approved', 'stdout', 'stderr', 'exit', 'approval_denied']) t.ok(kinds.includes(k), `${k} is a job event`);
});

t.test('cancelling a task that waits for an approval cancels the approval and ends the task', async (t) => {
  const model = scripted([{ calls: [{ name: 'run_command', arguments: { argv: ['touch', 'never'] } }] }]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  const job = b.submit('run');
  const db = b.engine.db();
  await until(() => pendingApprovals(db, { project: b.sb.project, jobId: job.id }).length === 1);
  const row = await b.engine.jobs().cancel(job.id);
  t.equal(row.state, 'cancelled');
  t.same(pendingApprovals(db, { project: b.sb.project, jobId: job.id }), [], 'no approval is left pending');
  t.notOk(existsSync(join(b.sb.project, 'never')));
});

t.test('list_dir lists a dot-directory by its name and refuses .., / and an absolute path outside', async (t) => {
  const { results } = await calls(
    t,
    [
      [{ name: 'list_dir', arguments: { path: '.github' } }],
      [{ name: 'list_dir', arguments: { path: './.github/' } }],
      [{ name: 'list_dir', arguments: { path: '..' } }],
      [{ name: 'list_dir', arguments: { path: '/' } }],
      [{ name: 'list_dir', arguments: { path: '/etc' } }],
      [{ name: 'list_dir', arguments: { path: 'src/../..' } }],
      [{ name: 'list_dir', arguments: { path: '.' } }],
    ],
    (p) => {
      mkdirSync(join(p, '.github', 'workflows'), { recursive: true });
      writeFileSync(join(p, '.github', 'workflows', 'ci.yml'), 'on: push\n');
      mkdirSync(join(p, 'src'));
    },
  );
  t.match(results[0]!.content, /^\.github: 1 entries\nworkflows\/\tdir/, '.github is listed, not github');
  t.match(results[1]!.content, /^\.github: 1 entries/);
  for (const i of [2, 3, 4, 5]) {
    t.equal(results[i]!.is_error, true);
    t.match(results[i]!.content, /^SC_PATH_OUTSIDE: .* is outside the project/, `call ${i} is refused, not the root listed`);
    t.notMatch(results[i]!.content, /\.github/);
  }
  t.match(results[6]!.content, /^\.: \d+ entries\n.*\.github\/\tdir/s, '. is the root');
});
