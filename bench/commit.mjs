// What one audit commit costs on this machine, apart from everything else a call does:
// a decision-sized row appended the way src/store/audit.ts appends it (BEGIN IMMEDIATE,
// read the head, insert, COMMIT) to a WAL database with synchronous=NORMAL, paced like
// a call (the caches go cold in between) and in a tight loop (they stay warm).
//
//   node bench/commit.mjs                 shared locks, as shadowcode runs (every process can use the file)
//   node bench/commit.mjs --exclusive     also with locking_mode=EXCLUSIVE, for comparison only: the
//                                         connection keeps its locks and needs no file lock per commit,
//                                         but no other process can open the database while it is open
//
// Under `chrt -f 10` as root for wall-clock figures on a busy machine. Not a test.
import { rmSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median } from './lib.mjs';

const Database = createRequire(import.meta.url)('better-sqlite3');
const CALLS = 600;
const PACE_MS = 10;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))];

async function measure(mode) {
  const dir = mkdtempSync(join(tmpdir(), 'sc-commit-'));
  const db = new Database(join(dir, 'state.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  if (mode === 'exclusive') db.pragma('locking_mode = EXCLUSIVE');
  db.exec('CREATE TABLE audit (seq INTEGER PRIMARY KEY, at TEXT NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL)');
  const head = db.prepare('SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1');
  const insert = db.prepare('INSERT INTO audit (seq, at, kind, body, prev, hash) VALUES (?, ?, ?, ?, ?, ?)');
  const body = JSON.stringify({ decision_id: '0'.repeat(36), action: 'tool:shadow_status', principal: { kind: 'client', owner: 'stdio:1:00000000' }, project: dir, allow: true, reasons: ['read-tools'], ceiling: 'read_only', policy_hash: 'f'.repeat(64) });
  const tx = db.transaction(() => {
    const last = head.get();
    insert.run((last?.seq ?? 0) + 1, new Date().toISOString(), 'decision', body, last?.hash ?? '0'.repeat(64), 'a'.repeat(64));
  });
  for (let i = 0; i < 300; i++) tx.immediate();
  const paced = [];
  for (let i = 0; i < CALLS; i++) {
    await sleep(PACE_MS);
    const t = performance.now();
    tx.immediate();
    paced.push((performance.now() - t) * 1000);
  }
  const n = 3000;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) tx.immediate();
  const tight = ((performance.now() - t0) * 1000) / n;
  const c = process.cpuUsage(c0);
  db.close();
  rmSync(dir, { recursive: true, force: true });
  console.log(`${mode.padEnd(9)} paced: median ${median(paced).toFixed(0)} µs, p99 ${q(paced, 0.99).toFixed(0)}, max ${Math.max(...paced).toFixed(0)} (${CALLS} commits, one every ${PACE_MS} ms); tight loop: ${tight.toFixed(0)} µs wall, ${((c.user + c.system) / n).toFixed(0)} µs CPU (${((100 * c.system) / (c.user + c.system)).toFixed(0)}% system)`);
}

await measure('shared');
if (process.argv.includes('--exclusive')) await measure('exclusive');
