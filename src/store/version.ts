/*
 * A token that moves whenever the store may have changed, for pollers that should cost
 * next to nothing while nothing happens (an open console page polls many times a second).
 *
 *   data_version     moves when any other connection, in this process or another, commits
 *   total_changes()  moves when this connection writes (data_version ignores its own writes)
 *
 * Equal tokens mean no commit in between; a different one only means "look again".
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';

const statements = new WeakMap<Db, Statement>();

export function storeVersion(db: Db): string {
  let st = statements.get(db);
  if (!st) statements.set(db, (st = db.prepare('SELECT data_version AS v, total_changes() AS c FROM pragma_data_version')));
  const { v, c } = st.get() as { v: number; c: number };
  return `${v}:${c}`;
}
