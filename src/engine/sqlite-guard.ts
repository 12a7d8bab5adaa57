/*
 * Statements refused before SQLite sees them. better-sqlite3's `readonly` flag
 * already refuses writes, but SQLite counts ATTACH, DETACH and most PRAGMAs as
 * read-only, and they change the connection or reach other files.
 */
const ALLOWED_PRAGMAS = new Set(['table_info', 'table_xinfo', 'index_list', 'index_info', 'index_xinfo', 'foreign_key_list', 'database_list', 'compile_options', 'collation_list', 'function_list', 'user_version', 'schema_version', 'page_count', 'page_size']);

/** SQL with comments and quoted text blanked, so keywords inside strings do not count. */
function code(sql: string): string {
  return sql
    .replace(/--[^\n]*/g, ' ')
    .replace(/\/\*[\s\S]*?(\*\/|$)/g, ' ')
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/"(?:[^"]|"")*"/g, '""')
    .replace(/`[^`]*`/g, '``')
    .replace(/\[[^\]]*\]/g, '[]');
}

export function refusalOf(sql: string): string | null {
  const c = code(sql);
  if (/\b(attach|detach)\b/i.test(c)) return 'ATTACH and DETACH are refused';
  if (/\bvacuum\b/i.test(c)) return 'VACUUM is refused';
  if (/\bload_extension\s*\(/i.test(c)) return 'load_extension is refused';
  const pragma = /\bpragma\s+(?:\w+\s*\.\s*)?(\w+)\s*(=|\()?/gi;
  for (const m of c.matchAll(pragma)) {
    const name = (m[1] as string).toLowerCase();
    if (m[2] === '=') return `PRAGMA ${name} with a value is refused`;
    if (!ALLOWED_PRAGMAS.has(name)) return `PRAGMA ${name} is refused; only inspection pragmas are allowed`;
  }
  return null;
}
