/*
 * shadow_sqlite's executor: one bounded, read-only query against an existing
 * SQLite file inside the project.
 *
 *   path ─► real path inside the project, a regular file ─► SQLite header ─► child process
 *        ─► deadline: SIGKILL, SC_TIMEOUT  ─► result or SC_SQL_REFUSED/SC_SQL_FAILED
 */
import { join } from 'node:path';
import { ScError } from '../errors.js';
import { startOwnProgram } from './spawn/index.js';
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

export async function runSqlite(ticket: GateTicket, project: string, req: SqliteRequest, limits: SqliteLimits, guard?: (realPath: string) => void): Promise<unknown> {
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
  const child = startOwnProgram(ticket, join(packageRoot(), 'dist', 'sqlite-child.js'), [], { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '' } });
  let out = '';
  let err = '';
  let tooBig = false;
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    if (out.length > limits.sqlite_bytes * 2 + 65536) {
      tooBig = true;
      child.kill('SIGKILL');
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-4096)));
  child.stdin!.end(JSON.stringify(job));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, limits.sqlite_deadline_ms);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  if (timedOut) throw new ScError('SC_TIMEOUT', `the query ran longer than ${limits.sqlite_deadline_ms} ms and was stopped`);
  if (tooBig) throw new ScError('SC_RESULT_TOO_LARGE', 'the query result is larger than the byte limit');
  if (code !== 0) throw new ScError('SC_SQL_FAILED', `the query process failed: ${err.trim().split('\n').pop() ?? code}`);
  const result = JSON.parse(out) as { error?: { code: 'SC_SQL_REFUSED' | 'SC_SQL_FAILED'; message: string } };
  if (result.error) throw new ScError(result.error.code, result.error.message);
  return result;
}
