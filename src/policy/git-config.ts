/*
 * Just enough of git's config syntax to find the settings that name paths and programs.
 *
 *   text ─► lines (a trailing backslash joins the next) ─► [section], [section "sub"],
 *   [section.sub] headers ─► name = value | name (true) ─► { section, sub, name, value }
 *
 * Section and variable names are case-insensitive in git, so both come back lower case; a
 * subsection keeps its case. A value loses its quotes, its escapes are read (\" \\ \n \t
 * \b) and a comment (# or ; outside quotes) ends it. A malformed line is skipped: git
 * would refuse the whole file, and then nothing in it runs either.
 */

export interface GitSetting {
  readonly section: string;
  readonly sub: string | null;
  readonly name: string;
  readonly value: string;
}

function unquoteValue(raw: string): string {
  let out = '';
  let quoted = false;
  let pendingSpace = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if (c === '\\' && i + 1 < raw.length) {
      const n = raw[++i] as string;
      out += pendingSpace + (n === 'n' ? '\n' : n === 't' ? '\t' : n === 'b' ? '\b' : n);
      pendingSpace = '';
      continue;
    }
    if (c === '"') {
      quoted = !quoted;
      out += pendingSpace;
      pendingSpace = '';
      continue;
    }
    if (!quoted && (c === '#' || c === ';')) break;
    if (!quoted && (c === ' ' || c === '\t')) {
      // Whitespace outside quotes counts only between words, not at the end.
      if (out !== '') pendingSpace += c;
      continue;
    }
    out += pendingSpace + c;
    pendingSpace = '';
  }
  return out;
}

const HEADER = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$/;
const VARIABLE = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$/;

export function parseGitConfig(text: string): GitSetting[] {
  const out: GitSetting[] = [];
  let section: string | null = null;
  let sub: string | null = null;
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i] as string;
    // A backslash at the end of a line continues the value on the next one.
    while (/(^|[^\\])(\\\\)*\\$/.test(line) && i + 1 < lines.length) line = line.slice(0, -1) + (lines[++i] as string);
    let rest = line.trim();
    if (rest === '' || rest.startsWith('#') || rest.startsWith(';')) continue;
    const h = HEADER.exec(rest);
    if (h) {
      const name = (h[1] as string).toLowerCase();
      if (h[2] !== undefined) {
        section = name;
        sub = (h[2] as string).replace(/\\(.)/g, '$1');
      } else {
        // The old form [section.sub] (its subsection is lower case, as git reads it).
        const dot = name.indexOf('.');
        section = dot < 0 ? name : name.slice(0, dot);
        sub = dot < 0 ? null : name.slice(dot + 1);
      }
      rest = (h[3] as string).trim();
      if (rest === '' || rest.startsWith('#') || rest.startsWith(';')) continue;
    }
    if (section === null) continue;
    const v = VARIABLE.exec(rest);
    if (!v) continue;
    out.push({ section, sub, name: (v[1] as string).toLowerCase(), value: v[2] === undefined ? 'true' : unquoteValue(v[2] as string) });
  }
  return out;
}

/** Whether a setting is `section.name`, `section.sub.name`, or for `section.*.name` that name in any subsection; section and name ignoring case as git does. */
export function matchesKey(s: GitSetting, key: string): boolean {
  const parts = key.split('.');
  const [section, sub, name] = parts.length === 2 ? [parts[0], null, parts[1]] : [parts[0], parts[1], parts[2]];
  if (s.section !== section?.toLowerCase() || s.name !== name?.toLowerCase()) return false;
  if (sub === null) return s.sub === null;
  return s.sub !== null && (sub === '*' || s.sub === sub);
}

/** The first word of a command line as a shell would read it (quotes removed); null for an empty one. */
export function firstWord(command: string): string | null {
  let word = '';
  let quote: string | null = null;
  let started = false;
  for (const c of command.trimStart()) {
    if (quote) {
      if (c === quote) quote = null;
      else word += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      started = true;
      continue;
    }
    if (/\s/.test(c) || ';&|<>()'.includes(c)) break;
    word += c;
    started = true;
  }
  return started && word !== '' ? word : null;
}
