/*
 * Statements refused before SQLite sees them. better-sqlite3's `readonly` flag
 * already refuses writes, but SQLite counts ATTACH, DETACH and most PRAGMAs as
 * read-only, and they change the connection or reach other files.
 *
 *   SQL ─► tokens, as SQLite's tokenizer splits them (comments dropped; strings,
 *   blobs and quoted names kept whole, names unquoted and lower-cased)
 *   ─► ATTACH / DETACH / VACUUM keywords, load_extension( calls
 *   ─► every PRAGMA: its name normalised ("locking_mode", [locking_mode],
 *      `locking_mode` and 'locking_mode' are all locking_mode), then the
 *      allow-list, and no value: `= …` is refused, `( … )` only for the
 *      pragmas whose argument names a table or index; the table-valued
 *      pragma_NAME form is held to the same allow-list
 *
 * The decision is on tokens, never on text, so quoting a name changes nothing.
 * Input SQLite would not tokenise the same way (an unterminated string or
 * quoted name) is refused rather than guessed at.
 */

/** Pragmas that only describe the schema or the build; `( … )` names the table or index to describe. */
const ARGUMENT_PRAGMAS = new Set(['table_info', 'table_xinfo', 'index_list', 'index_info', 'index_xinfo', 'foreign_key_list']);
/** Pragmas that only report a value; any argument would set it, so none is accepted. */
const REPORT_PRAGMAS = new Set(['database_list', 'compile_options', 'collation_list', 'function_list', 'user_version', 'schema_version', 'page_count', 'page_size']);

export type TokenKind = 'name' | 'quoted' | 'string' | 'blob' | 'number' | 'variable' | 'op';

export interface Token {
  readonly kind: TokenKind;
  /** Lower-cased for bare and quoted names and strings' content; the operator text for ops. */
  readonly value: string;
}

const SPACE = /\s/;
const NAME_START = /[A-Za-z_\u0080-\uffff]/;
const NAME_PART = /[A-Za-z0-9_$\u0080-\uffff]/;

/** Reads a quoted run ending at `close`, where a doubled close quote stands for one; -1 if unterminated. */
function quoted(sql: string, start: number, close: string): { text: string; end: number } | null {
  let text = '';
  let i = start + 1;
  for (;;) {
    const j = sql.indexOf(close, i);
    if (j === -1) return null;
    text += sql.slice(i, j);
    if (close !== ']' && sql[j + 1] === close) {
      text += close;
      i = j + 2;
      continue;
    }
    return { text, end: j + 1 };
  }
}

/** Tokens of `sql` the way SQLite's tokenizer reads them, or a reason it cannot be tokenised. */
export function tokenize(sql: string): Token[] | string {
  const out: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const c = sql[i] as string;
    if (SPACE.test(c)) {
      i++;
    } else if (c === '-' && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i);
      i = nl === -1 ? sql.length : nl + 1;
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end === -1 ? sql.length : end + 2; // SQLite ends an unterminated comment at the end of input
    } else if (c === "'" || c === '"' || c === '`' || c === '[') {
      const q = quoted(sql, i, c === '[' ? ']' : c);
      if (!q) return `an unterminated ${c === "'" ? 'string' : 'quoted name'} is refused`;
      out.push({ kind: c === "'" ? 'string' : 'quoted', value: q.text.toLowerCase() });
      i = q.end;
    } else if ((c === 'x' || c === 'X') && sql[i + 1] === "'") {
      const q = quoted(sql, i + 1, "'");
      if (!q) return 'an unterminated blob literal is refused';
      out.push({ kind: 'blob', value: q.text });
      i = q.end;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(sql[i + 1] ?? ''))) {
      let j = i + 1;
      while (j < sql.length && /[0-9A-Za-z_.]/.test(sql[j] as string)) {
        if ((sql[j] === 'e' || sql[j] === 'E') && (sql[j + 1] === '+' || sql[j + 1] === '-')) j++;
        j++;
      }
      out.push({ kind: 'number', value: sql.slice(i, j) });
      i = j;
    } else if (c === '?' || c === ':' || c === '@' || c === '$' || c === '#') {
      let j = i + 1;
      while (j < sql.length && NAME_PART.test(sql[j] as string)) j++;
      out.push({ kind: 'variable', value: sql.slice(i, j) });
      i = j;
    } else if (NAME_START.test(c)) {
      let j = i + 1;
      while (j < sql.length && NAME_PART.test(sql[j] as string)) j++;
      out.push({ kind: 'name', value: sql.slice(i, j).toLowerCase() });
      i = j;
    } else {
      const two = sql.slice(i, i + 2);
      const op = ['<=', '>=', '<>', '!=', '==', '||', '<<', '>>', '->'].includes(two) ? (sql.slice(i, i + 3) === '->>' ? '->>' : two) : c;
      out.push({ kind: 'op', value: op });
      i += op.length;
    }
  }
  return out;
}

/** A name as SQLite resolves it: a bare word, a quoted name, or (in a pragma's name position) a string. */
function nameOf(t: Token | undefined): string | null {
  return t && (t.kind === 'name' || t.kind === 'quoted' || t.kind === 'string') ? t.value : null;
}

function checkPragma(tokens: readonly Token[], at: number): string | null {
  let i = at + 1;
  let name = nameOf(tokens[i]);
  if (name !== null && tokens[i + 1]?.kind === 'op' && tokens[i + 1]?.value === '.') {
    i += 2; // schema.name
    name = nameOf(tokens[i]);
  }
  if (name === null) return 'a PRAGMA without a name is refused';
  const next = tokens[i + 1];
  if (next?.kind === 'op' && next.value === '=') return `PRAGMA ${name} with a value is refused`;
  if (ARGUMENT_PRAGMAS.has(name)) return null;
  if (!REPORT_PRAGMAS.has(name)) return `PRAGMA ${name} is refused; only inspection pragmas are allowed`;
  if (next?.kind === 'op' && next.value === '(') return `PRAGMA ${name} with a value is refused`;
  return null;
}

export function refusalOf(sql: string): string | null {
  const tokens = tokenize(sql);
  if (typeof tokens === 'string') return tokens;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.kind === 'name' && (t.value === 'attach' || t.value === 'detach')) return 'ATTACH and DETACH are refused';
    if (t.kind === 'name' && t.value === 'vacuum') return 'VACUUM is refused';
    const next = tokens[i + 1];
    if ((t.kind === 'name' || t.kind === 'quoted') && t.value === 'load_extension' && next?.kind === 'op' && next.value === '(') return 'load_extension is refused';
    // The table-valued form (SELECT * FROM pragma_integrity_check) runs the pragma too.
    if ((t.kind === 'name' || t.kind === 'quoted') && t.value.startsWith('pragma_')) {
      const name = t.value.slice('pragma_'.length);
      if (!ARGUMENT_PRAGMAS.has(name) && !REPORT_PRAGMAS.has(name)) return `pragma_${name} is refused; only inspection pragmas are allowed`;
    }
    if (t.kind === 'name' && t.value === 'pragma') {
      const why = checkPragma(tokens, i);
      if (why) return why;
    }
  }
  return null;
}
