// A write that races a directory-for-link swap never lands outside the
// project, leaves no temporary file and no change pending: 500 write_file
// calls from a scripted task against a real process swapping the directory.
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import t from 'tap';
import type { Message } from '../../src/agent/types.js';
import { sql } from '../../src/store/db.js';
import { agentBench, scripted } from '../fixtures/agent.js';
import { ROOT } from '../fixtures/env.js';

const WRITES = 500;
const PER_TURN = 50;

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

t.test('500 writes racing a directory swapped for a link to outside: none lands outside, no temp file, nothing pending', async (t) => {
  const steps = [];
  for (let i = 0; i < WRITES; i += PER_TURN) {
    steps.push({ calls: Array.from({ length: PER_TURN }, (_, k) => ({ name: 'write_file', arguments: { path: `d/w${i + k}.txt`, content: `w${i + k}\n` } })) });
  }
  steps.push({ calls: [{ name: 'finish', arguments: { summary: 'wrote' } }] });
  const model = scripted(steps);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  const p = b.sb.project;
  const outside = join(b.sb.root, 'outside');
  mkdirSync(outside);
  mkdirSync(join(p, 'd'));

  const swapper = spawn(process.execPath, [join(ROOT, 'test', 'fixtures', 'dir-swapper.mjs'), join(p, 'd'), outside], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: swapper.stdout! });
  const said: string[] = [];
  const ready = new Promise<void>((resolve) => lines.on('line', (l) => (said.push(l), l === 'ready' && resolve())));
  const ended = new Promise<void>((resolve) => swapper.on('exit', () => resolve()));
  t.teardown(() => {
    if (swapper.exitCode === null) swapper.kill('SIGKILL');
  });
  await ready;

  const job = b.submit('write many files');
  const done = await b.settle(job.id, 600000);
  swapper.stdin!.end();
  await ended;
  t.equal(done.state, 'succeeded');
  t.match(said.at(-1), /^swaps [1-9]\d*$/, 'the directory really was swapped for a link');

  const results = model.requests.at(-1)!.messages.filter((m) => m.role === 'tool') as Array<Extract<Message, { role: 'tool' }>>;
  t.equal(results.length, WRITES, 'every write was answered');
  const codes = new Map<string, number>();
  let landed = 0;
  for (const r of results) {
    if (!r.is_error) landed++;
    else {
      const code = /^(SC_[A-Z_]+):/.exec(r.content)?.[1] ?? `unexplained: ${r.content.slice(0, 80)}`;
      codes.set(code, (codes.get(code) ?? 0) + 1);
    }
  }
  const failed = [...codes.values()].reduce((a, n) => a + n, 0);
  t.equal(landed + failed, WRITES);
  t.ok([...codes.keys()].every((c) => ['SC_WRITE_RACED', 'SC_PATH_OUTSIDE', 'SC_FILE_NOT_FOUND', 'SC_FILE_REFUSED'].includes(c)), `each failure has a clear code: ${JSON.stringify([...codes])}`);
  t.notOk(codes.has('SC_INTERNAL'), results.filter((r) => r.content.startsWith('SC_INTERNAL')).map((r) => r.content).join(' | '));

  t.same(readdirSync(outside), [], 'no file landed outside the project');
  const inside = walk(p);
  t.same(inside.filter((f) => f.endsWith('.shadowcode.tmp')), [], 'no temporary file inside');
  const names = new Set(inside.filter((f) => /\/w\d+\.txt$/.test(f)).map((f) => f.slice(f.lastIndexOf('/') + 1)));
  const written = results.filter((r) => !r.is_error).map((r) => /Created (?:.*\/)?(w\d+\.txt)/.exec(r.content)?.[1]);
  t.ok(written.every((n) => n && names.has(n)), 'every write reported as done is a file inside the project');
  for (const f of inside.filter((f) => /\/w\d+\.txt$/.test(f)).slice(0, 50)) t.match(readFileSync(f, 'utf8'), /^w\d+\n$/);

  const db = b.engine.db();
  t.equal((sql(db, "SELECT count(*) AS n FROM changes WHERE state = 'pending'").get() as { n: number }).n, 0, 'no change is left pending');
  t.equal((sql(db, "SELECT count(*) AS n FROM changes WHERE job_id = ? AND state = 'applied'").get(job.id) as { n: number }).n, landed, 'an applied change for each write that landed');
  t.comment(`landed ${landed}, failed ${JSON.stringify([...codes])}, ${said.at(-1)}`);
});
