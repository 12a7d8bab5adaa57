/*
 * The cost of the change watch (src/engine/change-watch.ts) per approved command, on
 * projects of several sizes (bundled and run by bench/changes.mjs; not a test, no
 * assertions).
 *
 *   project of N files (2 KiB each, 50 to a folder) in a trusted project, a task row
 *   open     the baseline: every file read, hashed and kept in the store (once per task)
 *   look     nothing changed: every file lstat'ed, none read (gate decision included)
 *   changed  after 10 files were rewritten: those 10 read, recorded with checkpoints
 *   command  what run_command adds: a look before the approval, one after it, and one
 *            after the command (here: one that changed 10 files)
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { observeJob } from '../src/engine/change-watch.js';
import { enforce } from '../src/policy/gate.js';
import { shippedPolicy } from '../src/policy/load.js';
import { openDb, sql } from '../src/store/db.js';
import { ensureProfileDir } from '../src/store/profile.js';
import { setTrust } from '../src/store/projects.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

export async function run(o: { sizes?: number[]; looks?: number } = {}) {
  const sizes = o.sizes ?? [200, 2000, 10000];
  const looks = o.looks ?? 10;
  const policy = shippedPolicy();
  const out: Array<{ files: number; bytes: number; open_ms: number; look_ms: number; changed_ms: number; command_ms: number; store_bytes: number }> = [];
  for (const n of sizes) {
    const root = mkdtempSync(join(tmpdir(), 'sc-changes-bench-'));
    const project = join(root, 'project');
    const profile = join(root, 'profile');
    mkdirSync(project);
    ensureProfileDir(profile);
    const body = Buffer.alloc(2048, 'x');
    for (let i = 0; i < n; i++) {
      const dir = join(project, `d${Math.floor(i / 50)}`);
      if (i % 50 === 0) mkdirSync(dir);
      writeFileSync(join(dir, `f${i}.txt`), body);
    }
    const db = openDb(profile, 5000);
    const gate = { policy, db: () => db };
    await enforce(gate, { action: 'cli:trust', principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: null }, (t) => setTrust(t, db, project, 'workspace'));
    const id = 'job_bench';
    const now = new Date().toISOString();
    sql(db, "INSERT INTO jobs (id, project, kind, owner, ceiling, state, title, created_at, updated_at) VALUES (?, ?, 'agent', 'stdio:1:bench', 'workspace', 'running', 'bench', ?, ?)").run(id, project, now, now);
    const job = { id, owner: 'stdio:1:bench', project, ceiling: 'workspace' as const };
    const watch = { id, jobId: id, project };
    const cause = { via: 'command', why: 'bench' };
    const dbBefore = statSync(join(profile, 'state.db')).size;
    let t0 = performance.now();
    observeJob(gate, job, watch, null);
    const openMs = performance.now() - t0;
    db.pragma('wal_checkpoint(TRUNCATE)');
    const storeBytes = statSync(join(profile, 'state.db')).size - dbBefore;
    // Out of the racy window, so a look trusts the stamps as it would a minute into a task.
    await new Promise((r) => setTimeout(r, 2100));
    observeJob(gate, job, watch, null);
    const plain: number[] = [];
    const changed: number[] = [];
    for (let k = 0; k < looks; k++) {
      t0 = performance.now();
      observeJob(gate, job, watch, null);
      plain.push(performance.now() - t0);
      for (let i = 0; i < 10; i++) writeFileSync(join(project, `d${Math.floor((k * 10 + i) % n / 50)}`, `f${(k * 10 + i) % n}.txt`), `changed ${k}\n`);
      t0 = performance.now();
      observeJob(gate, job, watch, cause);
      changed.push(performance.now() - t0);
    }
    const look = median(plain);
    const ch = median(changed);
    out.push({ files: n, bytes: n * body.length, open_ms: openMs, look_ms: look, changed_ms: ch, command_ms: 2 * look + ch, store_bytes: storeBytes });
    db.close();
    rmSync(root, { recursive: true, force: true });
  }
  return out;
}
