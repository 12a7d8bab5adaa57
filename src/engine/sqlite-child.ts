/*
 * Runs one read-only query in a child process, so a slow query can be stopped
 * for real: the parent kills this process at the deadline. better-sqlite3 is
 * synchronous and cannot be interrupted from the same thread.
 *
 *   stdin: {path, action, sql?, params?, max_rows, max_bytes}
 *   ─► database open ─► stdout: "ready" line (the parent's deadline starts) ─► one JSON result
 */
import Database from 'better-sqlite3';
import { refusalOf } from './sqlite-guard.js';

interface Job {
  path: string;
  action: 'tables' | 'query';
  sql?: string;
  params?: unknown[] | Record<string, unknown>;
  max_rows: number;
  max_bytes: number;
}

function cell(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (Buffer.isBuffer(v)) return { base64: v.toString('base64') };
  return v;
}

function run(job: Job): unknown {
  const db = new Database(job.path, { readonly: true, fileMustExist: true });
  announce('ready');
  try {
    if (job.action === 'tables') {
      const rows = db.prepare("SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as Array<{ name: string; type: string }>;
      return {
        tables: rows.slice(0, job.max_rows).map((r) => ({
          name: r.name,
          type: r.type,
          columns: (db.prepare('SELECT name, type, pk FROM pragma_table_info(?)').all(r.name) as Array<{ name: string; type: string; pk: number }>).map((c) => ({ name: c.name, type: c.type, primary_key: c.pk > 0 })),
        })),
        truncated: rows.length > job.max_rows,
      };
    }
    const sql = job.sql as string;
    const refusal = refusalOf(sql);
    if (refusal) return { error: { code: 'SC_SQL_REFUSED', message: refusal } };
    const stmt = db.prepare(sql);
    if (!stmt.readonly) return { error: { code: 'SC_SQL_REFUSED', message: 'the statement would write to the database' } };
    if (!stmt.reader) return { error: { code: 'SC_SQL_REFUSED', message: 'only statements that return rows are run' } };
    const columns = stmt.columns().map((c) => c.name);
    const rows: unknown[][] = [];
    let bytes = 0;
    let truncated: string | null = null;
    const params = job.params === undefined ? [] : Array.isArray(job.params) ? job.params : [job.params];
    for (const row of stmt.raw(true).iterate(...params) as IterableIterator<unknown[]>) {
      if (rows.length >= job.max_rows) {
        truncated = `more than ${job.max_rows} rows`;
        break;
      }
      const out = row.map(cell);
      bytes += Buffer.byteLength(JSON.stringify(out));
      if (bytes > job.max_bytes) {
        truncated = `more than ${job.max_bytes} bytes of rows`;
        break;
      }
      rows.push(out);
    }
    return { columns, rows, row_count: rows.length, truncated: truncated !== null, truncated_reason: truncated };
  } finally {
    db.close();
  }
}

let announced = false;
function announce(word: string): void {
  if (announced) return;
  announced = true;
  process.stdout.write(`${word}\n`);
}

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => (input += d));
process.stdin.on('end', () => {
  let out: unknown;
  try {
    out = run(JSON.parse(input) as Job);
  } catch (err) {
    out = { error: { code: 'SC_SQL_FAILED', message: (err as Error).message } };
    // A database that did not open said no "ready": the parent still expects one line before the result.
    announce('failed');
  }
  process.stdout.write(JSON.stringify(out));
});
