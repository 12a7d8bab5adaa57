/*
 * shadow_sqlite's executor: one bounded, read-only query against an existing
 * SQLite file inside the project.
 *
 *   path ─► real path inside the project, a regular file ─► SQLite header
 *        ─► child process in its own sandbox: it sees the database (and its -wal/-shm,
 *           -journal) and nothing else of the machine's files: no project, profile or home
 *        ─► "ready" once the database is open ─► the deadline starts: SIGKILL, SC_TIMEOUT
 *        ─► result or SC_SQL_REFUSED/SC_SQL_FAILED
 *
 * The deadline counts the query, not the start of a process: on a loaded
 * machine node and the SQLite driver alone can take longer than the deadline to load.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ScError } from '../errors.js';
import type { Policy } from '../policy/load.js';
import type { Db } from '../store/db.js';
import { startHelper } from './spawn/index.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { packageRoot } from '../util/paths.js';
import { readProjectFile } from '../util/safe-read.js';

export interface SqliteLimits {
  readonly sqlite_rows: number;
  readonly sqlite_bytes: number;
  readonly sqlite_deadline_ms: number;
}

export interface SqliteRequest {
  readonly path: string;
  readonly action: 'tables' | 'query';
  readonly sql?: string;
  readonly params?: unknown[] | Record<string, unknown>;
  readonly max_rows?: number;
}

const HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/** An empty file is an empty database to SQLite; anything else must carry the header. */
function isSqliteHeader(head: Buffer): boolean {
  return head.length === 0 || head.equals(HEADER);
}

/** How long the query process may take to start and open the database, before the deadline starts: a bound on a broken start, not a query limit. */
const START_LIMIT_MS = 60_000;

/** What the query child sees: the database read-only, and SQLite's files beside it as they are (the shared-memory index read-write, so locks are shared with writers outside). */
export function databaseFiles(file: string): { reads: Array<{ path: string }>; writes: string[] } {
  const reads = [{ path: file }];
  const writes: string[] = [];
  for (const suffix of ['-wal', '-journal']) if (existsSync(file + suffix)) reads.push({ path: file + suffix });
  if (existsSync(`${file}-shm`)) writes.push(`${file}-shm`);
  return { reads, writes };
}

export async function runSqlite(ticket: GateTicket, project: string, req: SqliteRequest, limits: SqliteLimits, ctx: { policy: Policy; db: Db }, guard?: (realPath: string) => void): Promise<unknown> {
  assertTicket(ticket, 'tool:shadow_sqlite');
  // The header through the bounded primitive: a FIFO or device is refused before anything opens it for real.
  const head = readProjectFile(project, req.path, { cap: HEADER.length, kind: 'SQLite database', overflow: 'truncate' });
  const file = head.path;
  // The file actually opened is judged too (a link into a protected directory).
  guard?.(file);
  if (!isSqliteHeader(head.bytes)) throw new ScError('SC_SQL_FAILED', `${req.path} is not a SQLite database`);
  const job = {
    path: file,
    action: req.action,
    sql: req.sql,
    params: req.params,
    max_rows: Math.min(req.max_rows ?? limits.sqlite_rows, limits.sqlite_rows),
    max_bytes: limits.sqlite_bytes,
  };
  const { child } = startHelper(ticket, { program: join(packageRoot(), 'dist', 'sqlite-child.cjs'), ...databaseFiles(file), policy: ctx.policy, db: ctx.db, stdio: ['pipe', 'pipe', 'pipe'], project });
  let out = '';
  let err = '';
  let tooBig = false;
  let timedOut: 'start' | 'query' | null = null;
  const stopAfter = (ms: number, why: 'start' | 'query') =>
    setTimeout(() => {
      timedOut = why;
      child.kill('SIGKILL'); // bwrap's death takes the sandbox down with it (--die-with-parent)
    }, ms);
  let timer = stopAfter(START_LIMIT_MS, 'start');
  let ready = false;
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    if (!ready && out.includes('\n')) {
      // The first line says the database is open: from here on the clock is the query's.
      ready = true;
      out = out.slice(out.indexOf('\n') + 1);
      clearTimeout(timer);
      timer = stopAfter(limits.sqlite_deadline_ms, 'query');
    }
    if (out.length > limits.sqlite_bytes * 2 + 65536) {
      tooBig = true;
      child.kill('SIGKILL');
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-4096)));
  child.stdin!.on('error', () => {}); // a child that died at start closes its stdin under us
  child.stdin!.end(JSON.stringify(job));
  const code = await new Promise<number | null>((resolve) => {
    child.on('error', (e) => {
      err = e.message;
      resolve(null);
    });
    child.on('close', resolve);
  });
  clearTimeout(timer);
  if (timedOut === 'query') throw new ScError('SC_TIMEOUT', `the query ran longer than ${limits.sqlite_deadline_ms} ms and was stopped`);
  if (timedOut === 'start') throw new ScError('SC_TIMEOUT', `the query process did not open the database within ${START_LIMIT_MS} ms and was stopped`);
  if (tooBig) throw new ScError('SC_RESULT_TOO_LARGE', 'the query result is larger than the byte limit');
  if (code !== 0) throw new ScError('SC_SQL_FAILED', `the query process failed: ${err.trim().split('\n').pop() ?? code}`);
  const result = JSON.parse(out) as { error?: { code: 'SC_SQL_REFUSED' | 'SC_SQL_FAILED'; message: string } };
  if (result.error) throw new ScError(result.error.code, result.error.message);
  return result;
}
