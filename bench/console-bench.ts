/*
 * The console's live feed, end to end (bundled and run by bench/console.mjs; not a test,
 * no assertions): a job event written to the store ─► the feed's next read ─► a server-sent
 * event ─► the page appends the step. Timed from just before the write to the moment a
 * MutationObserver in the page sees the step, on the same clock (Date.now()).
 *
 *   trusted project ─► a job row ─► console + headless Chromium following that job
 *   rounds: addEvent(job, 'bench', {round}) ─► wait for the page's report ─► ms
 *   then 20,000 old jobs in the store, the page open and idle for 3 s ─► this process's CPU
 */
import { mkdirSync, mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { chromium } from 'playwright-core';
import { Ctx } from '../src/cli/context.js';
import { main } from '../src/cli/main.js';
import { openConsole } from '../src/console/open.js';
import { addEvent, now } from '../src/engine/job-events.js';
import { openDb } from '../src/store/db.js';

/** Jobs in the store while the open page's idle cost is measured: a long history. */
const IDLE_JOBS = 20000;

export async function run(rounds = 40): Promise<{ ms: number[]; poll_ms: number; idle: { jobs: number; cpu_ms_per_s: number } }> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-console-bench-')));
  const project = join(root, 'project');
  mkdirSync(project);
  const env = { PATH: process.env.PATH, HOME: root, SHADOWCODE_HOME: join(root, 'profile') };
  const sink = new PassThrough();
  sink.resume();
  const io = { stdin: Readable.from([]), stdout: sink, stderr: sink, env, cwd: root };
  await main(['--project', project, 'trust'], io);
  const ctx = new Ctx(io, { json: false, help: false, version: false });
  const h = await openConsole(ctx.ops, 0, () => undefined);
  const db = openDb(ctx.profile.dir, 5000);
  const job = 'job_bench0000000000000000';
  db.prepare("INSERT INTO jobs (id, project, kind, owner, ceiling, state, title, created_at, updated_at) VALUES (?, ?, 'agent', 'bench', 'workspace', 'running', 'bench task', ?, ?)").run(job, project, now(), now());
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
  const ms: number[] = [];
  let idle = { jobs: 0, cpu_ms_per_s: Number.NaN };
  try {
    const page = await browser.newPage();
    await page.goto(h.url);
    await page.getByTestId('live').getByText('live').waitFor();
    await page.locator(`[data-testid="job"][data-id="${job}"]`).click();
    await page.getByTestId('steps').waitFor();
    await page.evaluate(() => {
      const w = window as unknown as { seen: Record<string, number> };
      w.seen = {};
      new MutationObserver((records) => {
        for (const r of records) for (const n of r.addedNodes) {
          const m = /"round":(\d+)/.exec((n as HTMLElement).textContent ?? '');
          if (m) w.seen[m[1] as string] = Date.now();
        }
      }).observe(document.querySelector('[data-testid="steps"]') as Node, { childList: true });
    });
    for (let i = 0; i < rounds; i++) {
      const start = Date.now();
      addEvent(db, job, 'bench', { round: i });
      const seen = await page.waitForFunction((k) => (window as unknown as { seen: Record<string, number> }).seen[k], String(i), { polling: 5 });
      ms.push(((await seen.jsonValue()) as number) - start);
    }
    // The page stays open and nothing happens: what the feed costs this process meanwhile.
    const ins = db.prepare("INSERT INTO jobs (id, project, kind, owner, ceiling, state, title, created_at, updated_at) VALUES (?, ?, 'test', 'bench', 'workspace', 'succeeded', 'old', ?, ?)");
    db.transaction(() => {
      for (let i = 0; i < IDLE_JOBS; i++) ins.run(`job_idle${String(i).padStart(17, '0')}`, project, now(), now());
    })();
    await new Promise((r) => setTimeout(r, 1000));
    const before = process.cpuUsage();
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, 3000));
    const used = process.cpuUsage(before);
    idle = { jobs: IDLE_JOBS, cpu_ms_per_s: (used.user + used.system) / 1000 / ((performance.now() - t0) / 1000) };
  } finally {
    await browser.close();
    await h.close();
    db.close();
    ctx.close();
  }
  return { ms, poll_ms: ctx.policy().limits.console.sse_poll_ms, idle };
}
