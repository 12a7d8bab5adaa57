// Architectural rules, written as tests: the layers of src/, the one gate, the one
// spawn point and the one door to generated validators.
//
//   each rule = a checker: sources ─► the violations it finds, as sorted lines
//     on src/                          ─► exactly the exceptions the rule allows (usually none)
//     on test/fixtures/architecture/   ─► exactly the violations planted there, one or more per
//                                         way round the rule (the negative control)
//
// A rule that silently stopped matching fails its control, and one that starts matching
// too much fails on src/. The sources are scanned as text with comments blanked and the
// insides of string and template literals blanked (same offsets), so a comment or a
// message cannot hide or fake code; literals are read back from the original text.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';
import { ROOT } from './fixtures/env.js';

interface Source {
  readonly rel: string;
  readonly text: string;
  /** `text` with comments and the insides of string and template literals blanked: its structure. */
  readonly code: string;
  /** `text` with comments blanked: its code and its literals (SQL, file modes). */
  readonly plain: string;
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

// The console's page (src/console/page) runs in the browser, not in Node: its fetch() is the page
// calling its own server, so the Node rules below (capabilities, raw reads) do not apply to it.
const PAGE = 'console/page/';

function load(root: string): { files: Source[]; page: Source[] } {
  const all = walk(root).map((abs) => {
    const text = readFileSync(abs, 'utf8');
    return { rel: relative(root, abs), text, code: mask(text), plain: mask(text, true) };
  });
  return { files: all.filter((f) => !f.rel.startsWith(PAGE)), page: all.filter((f) => f.rel.startsWith(PAGE)) };
}

// ─── scanning ────────────────────────────────────────────────────────────────────────────

const REGEX_AFTER = new Set(['', '(', ',', '=', ':', '[', '!', '&', '|', '?', '{', '}', ';', '+', '-', '*', '%', '<', '>', '~', '^']);
const REGEX_AFTER_WORD = /\b(return|typeof|case|in|of|void|yield|await|delete|throw|new|else|do)$/;

const isWordChar = (k: number) => (k >= 48 && k <= 57) || (k >= 65 && k <= 90) || (k >= 97 && k <= 122) || k === 95 || k === 36 || k > 127;

/** Comments become spaces, and unless `keepLiterals`, the insides of '…', "…", `…` (not their ${…} code) and /…/ too. */
function mask(src: string, keepLiterals = false): string {
  const out = src.split('');
  const erase = (a: number, b: number) => {
    for (let k = a; k < b; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  const blank = keepLiterals ? () => {} : erase;
  const n = src.length;
  const templates: number[] = []; // the brace depth at each open ${
  let depth = 0;
  let prev = '';
  let i = 0;
  while (i < n) {
    const c = src[i] as string;
    if (c === '/' && src[i + 1] === '/') {
      const e = src.indexOf('\n', i);
      const end = e < 0 ? n : e;
      erase(i, end);
      i = end;
    } else if (c === '/' && src[i + 1] === '*') {
      const e = src.indexOf('*/', i + 2);
      const end = e < 0 ? n : e + 2;
      erase(i, end);
      i = end;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < n && src[j] !== c && src[j] !== '\n') j += src[j] === '\\' ? 2 : 1;
      blank(i + 1, j);
      prev = c;
      i = j + 1;
    } else if (c === '`' || (c === '}' && templates.length > 0 && templates[templates.length - 1] === depth)) {
      if (c === '}') templates.pop();
      let j = i + 1;
      while (j < n && src[j] !== '`' && !(src[j] === '$' && src[j + 1] === '{')) j += src[j] === '\\' ? 2 : 1;
      blank(i + 1, j);
      if (src[j] === '$') {
        templates.push(depth);
        prev = '{';
        i = j + 2;
      } else {
        prev = '`';
        i = j + 1;
      }
    } else if (c === '/' && (REGEX_AFTER.has(prev) || REGEX_AFTER_WORD.test(src.slice(Math.max(0, i - 8), i).trimEnd()))) {
      let j = i + 1;
      let inClass = false;
      while (j < n && src[j] !== '\n') {
        if (src[j] === '\\') j++;
        else if (src[j] === '[') inClass = true;
        else if (src[j] === ']') inClass = false;
        else if (src[j] === '/' && !inClass) break;
        j++;
      }
      blank(i + 1, j);
      i = j + 1;
      while (/[a-z]/i.test(src[i] ?? '')) i++;
      prev = '/';
    } else {
      if (c === '{') depth++;
      else if (c === '}') depth--;
      if (c !== ' ' && c !== '\n' && c !== '\t' && c !== '\r') prev = isWordChar(src.charCodeAt(i)) ? 'w' : c;
      i++;
    }
  }
  return out.join('');
}

/** The index just past the bracket that closes the one at `open` (in masked code). */
function closing(code: string, open: number): number {
  const pairs: Record<string, string> = { '(': ')', '[': ']', '{': '}' };
  const stack: string[] = [];
  for (let i = open; i < code.length; i++) {
    const c = code[i] as string;
    if (c in pairs) stack.push(pairs[c] as string);
    else if (c === ')' || c === ']' || c === '}') {
      if (stack.pop() !== c) return -1;
      if (stack.length === 0) return i + 1;
    }
  }
  return -1;
}

/** The arguments of the call whose '(' is at `open`, as original text, split at top-level commas. */
function callArgs(f: Source, open: number): string[] {
  const end = closing(f.code, open);
  if (end < 0) return [];
  const args: string[] = [];
  let depth = 0;
  let from = open + 1;
  for (let i = open + 1; i < end - 1; i++) {
    const c = f.code[i];
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 0) {
      args.push(f.text.slice(from, i).trim());
      from = i + 1;
    }
  }
  const last = f.text.slice(from, end - 1).trim();
  if (last) args.push(last);
  return args;
}

/** A literal string argument's value, or null when the argument is anything else. */
function literal(arg: string): string | null {
  const m = /^(['"])([^'"\\]*)\1$/.exec(arg);
  return m ? (m[2] as string) : null;
}

interface Import {
  readonly spec: string | null; // null: computed (a template or an expression)
  readonly how: 'static' | 'dynamic' | 'require';
  /** What the declaration binds: 'type' (types only), 'side' (nothing), or the binding text. */
  readonly clause: string;
}

/** Every import, export-from, import() and require() of a source, with its specifier read from the original text. */
function importsOf(f: Source): Import[] {
  const out: Import[] = [];
  const specAt = (q: number): string | null => {
    const quote = f.code[q] as string;
    if (quote === '`') {
      const end = f.code.indexOf('`', q + 1);
      const raw = f.text.slice(q + 1, end);
      return raw.includes('${') ? null : raw;
    }
    if (quote !== "'" && quote !== '"') return null;
    return f.text.slice(q + 1, f.code.indexOf(quote, q + 1));
  };
  for (const m of f.code.matchAll(/(^|[;}\n])\s*(import|export)\b(?!\s*\()([^;'"`]*?)\bfrom\s*(['"])/g)) {
    const clause = (m[3] as string).trim();
    const named = /^\{([^}]*)\}$/.exec(clause);
    const typeOnly = /^type\b/.test(clause) || (named !== null && named[1]!.split(',').map((s) => s.trim()).filter(Boolean).every((s) => /^type\b/.test(s)));
    out.push({ spec: specAt((m.index as number) + m[0].length - 1), how: 'static', clause: typeOnly ? 'type' : clause });
  }
  for (const m of f.code.matchAll(/(^|[;}\n])\s*import\s*(['"])/g)) out.push({ spec: specAt((m.index as number) + m[0].length - 1), how: 'static', clause: 'side' });
  for (const m of f.code.matchAll(/\b(import|require)\s*\(\s*/g)) {
    if (m[1] === 'import' && /\.\s*$/.test(f.code.slice(0, m.index))) continue;
    out.push({ spec: specAt((m.index as number) + m[0].length), how: m[1] === 'import' ? 'dynamic' : 'require', clause: '*' });
  }
  return out;
}

const sorted = (xs: Iterable<string>) => [...new Set(xs)].sort();

// ─── the rules ───────────────────────────────────────────────────────────────────────────

// Lowest first. An import may point to its own layer or any layer below it. Telemetry sits under the
// policy: the gate and every layer above report to it (src/telemetry/hooks.ts), and it reports to nothing.
// The agent runtime (loop, native tools, providers, runners) sits on the engine and the client; the task
// contract they share with the engine and the client is engine/task-contract.ts, in the engine layer.
// The operations every surface shares (src/ops: typed input, the gate, a typed result) sit above the runtime
// and below every surface that calls them. The surfaces: the MCP server, the library (it starts the
// server for a host), the console page, and on top the CLI, whose `console` command starts the page.
// Nothing below the CLI imports it: a surface reaches an operation, never a command.
const LAYERS = ['base', 'transport', 'store', 'telemetry', 'policy', 'catalog', 'engine', 'register', 'client', 'agent', 'ops', 'server', 'lib', 'console', 'cli'];
function layerOf(rel: string): string {
  const top = rel.split('/')[0] as string;
  return LAYERS.includes(top) ? top : 'base';
}

/** Imports that point up the layer list, and imports whose target cannot be read. */
function layerViolations(files: Source[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    for (const i of importsOf(f)) {
      if (i.spec === null) {
        out.push(`${f.rel}: a computed module specifier`);
        continue;
      }
      if (!i.spec.startsWith('.')) continue;
      const target = targetOf(f.rel, i.spec);
      if (target === '') continue; // gen/ and package files
      if (LAYERS.indexOf(layerOf(target)) > LAYERS.indexOf(layerOf(f.rel))) out.push(`${f.rel} (${layerOf(f.rel)}) imports ${target} (${layerOf(target)})`);
    }
  }
  return sorted(out);
}

/** Where a relative import of `from` points, as a path under the scanned root ('' for a specifier that leaves it). */
function targetOf(from: string, spec: string): string {
  const target = relative('/src', resolve(dirname(join('/src', from)), spec)).replace(/\.js$/, '.ts');
  return target.startsWith('..') ? '' : target;
}

/**
 * Modules outside cli/ that import one inside it, in any way (types too, import(), require()): the
 * CLI is a surface over the operations (src/ops), and nothing else may lean on a command or its context.
 */
function cliImporters(files: Source[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    if (f.rel.startsWith('cli/')) continue;
    for (const i of importsOf(f)) if (i.spec?.startsWith('.') && targetOf(f.rel, i.spec).startsWith('cli/')) out.push(`${f.rel} imports ${targetOf(f.rel, i.spec)}`);
  }
  return sorted(out);
}

/**
 * Every import cycle, as the files of each strongly connected part of the import graph. Types count:
 * a cycle of types is still two modules that cannot be understood one without the other. A lazy
 * import() inside a function does not: it runs after every module has loaded, and it is how a command
 * table loads its commands (one of them, help, lists the table).
 */
function importCycles(files: Source[]): string[] {
  const known = new Set(files.map((f) => f.rel));
  const edges = new Map<string, string[]>();
  for (const f of files) edges.set(f.rel, sorted(importsOf(f).flatMap((i) => (i.how !== 'dynamic' && i.spec?.startsWith('.') && known.has(targetOf(f.rel, i.spec)) ? [targetOf(f.rel, i.spec)] : []))));
  // Tarjan's strongly connected components, iteratively (the graph has hundreds of nodes).
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[] = [];
  let next = 0;
  for (const root of [...known].sort()) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; at: number }> = [{ node: root, at: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length) {
      const top = work[work.length - 1] as { node: string; at: number };
      const succ = edges.get(top.node) as string[];
      if (top.at < succ.length) {
        const w = succ[top.at++] as string;
        if (!index.has(w)) {
          index.set(w, next);
          low.set(w, next++);
          stack.push(w);
          onStack.add(w);
          work.push({ node: w, at: 0 });
        } else if (onStack.has(w)) low.set(top.node, Math.min(low.get(top.node) as number, index.get(w) as number));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(top.node) as number));
      if (low.get(top.node) === index.get(top.node)) {
        const part: string[] = [];
        let w: string;
        do {
          w = stack.pop() as string;
          onStack.delete(w);
          part.push(w);
        } while (w !== top.node);
        if (part.length > 1 || (edges.get(top.node) as string[]).includes(top.node)) out.push(sorted(part).join(' -> '));
      }
    }
  }
  return sorted(out);
}

function validatorImporters(files: Source[]): string[] {
  return sorted(files.filter((f) => importsOf(f).some((i) => i.spec?.includes('gen/validators'))).map((f) => f.rel));
}

/** Whether an import binds a module's values whole (a default, a namespace, require(), import()), where any name can be reached. */
function bindsWhole(i: Import): boolean {
  if (i.clause === 'type' || i.clause === 'side') return false;
  return i.how !== 'static' || /^\*|^[\w$]+\s*(,|$)/.test(i.clause);
}

/** Files that name mintTicket, or bind the ticket module whole (where a name could be built). */
function ticketMinters(files: Source[]): string[] {
  return sorted(files.filter((f) => /\bmintTicket\b/.test(f.code) || importsOf(f).some((i) => /(^|\/)ticket\.js$/.test(i.spec ?? '') && bindsWhole(i))).map((f) => f.rel));
}

const AUDIT_WRITERS = ['appendAudit', 'appendAuditRows', 'deferAudit'];

/**
 * Every way a row other than the gate's could claim to be a decision: an audit writer called
 * with 'decision' or with a kind that is not a literal (a constant can hold 'decision'), the
 * row builder outside the gate, a writer renamed or passed around as a value, the audit module
 * bound whole, raw SQL that writes the audit table, and a decision built outside the gate.
 */
function decisionRowWriters(files: Source[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    if (f.rel === 'store/audit.ts') continue; // the writers themselves
    for (const i of importsOf(f)) {
      if (!/(^|\/)audit\.js$/.test(i.spec ?? '') || i.clause === 'type') continue;
      if (bindsWhole(i)) out.push(`${f.rel}: binds the audit module whole`);
      for (const w of AUDIT_WRITERS) if (new RegExp(`\\b${w}\\s+as\\b`).test(i.clause)) out.push(`${f.rel}: renames ${w}`);
    }
    const imports = [...f.code.matchAll(/(^|[;}\n])\s*(import|export)\b[^;]*?\bfrom\s*['"]/g)].map((m) => [m.index as number, (m.index as number) + m[0].length]);
    for (const m of f.code.matchAll(new RegExp(`\\b(${AUDIT_WRITERS.join('|')})\\b`, 'g'))) {
      const at = m.index as number;
      if (imports.some(([a, b]) => at >= a! && at < b!)) continue;
      const name = m[1] as string;
      const open = /^\s*\(/.exec(f.code.slice(at + name.length));
      if (!open) {
        out.push(`${f.rel}: uses ${name} as a value`);
        continue;
      }
      if (name === 'appendAuditRows') {
        if (f.rel !== 'policy/gate.ts') out.push(`${f.rel}: builds audit rows with appendAuditRows`);
        continue;
      }
      const kind = callArgs(f, at + name.length + open[0].length - 1)[1] ?? '';
      const lit = literal(kind);
      if (lit === null) out.push(`${f.rel}: ${name} with a kind that is not a literal (${kind.slice(0, 40)})`);
      else if (lit === 'decision') out.push(`${f.rel}: ${name} of a decision row`);
    }
    if (/\b(INSERT|REPLACE)\s+(OR\s+\w+\s+)?INTO\s+["'`[]?audit\b|\bUPDATE\s+(OR\s+\w+\s+)?["'`[]?audit["'`\]]?\s+SET\b|\bDELETE\s+FROM\s+["'`[]?audit\b/i.test(f.plain)) out.push(`${f.rel}: raw SQL writes the audit table`);
    if (f.rel !== 'policy/gate.ts' && /\bdecisionRow\b/.test(f.code)) out.push(`${f.rel}: builds a decision row`);
    if (!['policy/gate.ts', 'policy/authorize.ts'].includes(f.rel) && /\bauthorize\s*\(/.test(f.code)) out.push(`${f.rel}: decides outside the gate`);
  }
  return sorted(out);
}

// The gate is src/policy/gate.ts: enforce (one request) and admit (requests arriving together, as an
// HTTP request and the tool call it carries). Both must end in the same place: decision rows appended,
// then tickets minted.
function gateOrderProblems(gate: Source): string[] {
  const out: string[] = [];
  const mints = [...gate.code.matchAll(/\bmintTicket\s*\(/g)].map((m) => m.index as number);
  if (mints.length !== 1) out.push(`${mints.length} places mint tickets, not one`);
  const admitAt = gate.code.search(/\bexport function admit\(/);
  const appendAt = admitAt < 0 ? -1 : gate.code.indexOf('appendAuditRows(', admitAt);
  const admitEnd = admitAt < 0 ? -1 : closing(gate.code, gate.code.indexOf('{', gate.code.indexOf(')', admitAt)));
  if (!(admitAt >= 0 && appendAt > admitAt && mints.length > 0 && mints.every((m) => m > appendAt && m < admitEnd))) out.push('tickets are not minted inside admit after its rows are appended');
  const enforceAt = gate.code.search(/\bexport async function enforce\b/);
  const body = enforceAt < 0 ? '' : gate.code.slice(enforceAt, closing(gate.code, gate.code.indexOf('{', gate.code.indexOf(')', gate.code.indexOf('run:', enforceAt)))));
  if (!/\badmit\(env, \[request\]\)/.test(body)) out.push('enforce does not decide through admit');
  return out;
}

/** A function, method, constructor or arrow with a `ticket: GateTicket` parameter, and its body (null: an expression, no braces). */
interface Taker {
  readonly name: string;
  readonly body: string | null;
}

const skipSpace = (code: string, i: number) => {
  while (i < code.length && /\s/.test(code[i] as string)) i++;
  return i;
};

const takers = new WeakMap<Source, Taker[]>();

function ticketTakers(f: Source): Taker[] {
  let found = takers.get(f);
  if (!found) takers.set(f, (found = findTicketTakers(f)));
  return found;
}

function findTicketTakers(f: Source): Taker[] {
  const out: Taker[] = [];
  const code = f.code;
  for (const m of code.matchAll(/\bticket\??\s*:\s*GateTicket\b/g)) {
    // The parameter list around it: the nearest unclosed '(' before it (a '{' or '[' first: a property, not a parameter).
    let depth = 0;
    let open = -1;
    for (let i = (m.index as number) - 1; i >= 0; i--) {
      const c = code[i];
      if (c === ')' || c === ']' || c === '}') depth++;
      else if (c === '(' || c === '[' || c === '{') {
        if (depth-- > 0) continue;
        if (c === '(') open = i;
        break;
      } else if (c === ';' && depth === 0) break;
    }
    if (open < 0) continue;
    const close = closing(code, open);
    const before = code.slice(Math.max(0, open - 400), open).replace(/\s*(<[^()<>]*>)?\s*$/, '');
    const name = /(?:function\s+|^|[^\w$])([\w$]+)$/.exec(before.replace(/\basync$/, '').trimEnd())?.[1];
    const assigned = /([\w$]+)\s*[:=]\s*(async\s*)?$/.exec(before)?.[1];
    // A parameter list in a type alias is a type whatever follows; after a ':' it is one unless a body follows.
    const typeAlias = /(^|\n)\s*(export\s+)?type\s+[\w$]+[^=\n]*=\s*$/.test(before);
    if (typeAlias) continue;
    const inType = /:\s*$/.test(before);
    let i = skipSpace(code, close);
    let body: string | null | undefined;
    if (code[i] === ':') {
      // A return type, up to the body's '{' (a '{' right after the ':' or an operator still belongs to the type) or an arrow.
      let type = '';
      i++;
      for (;;) {
        i = skipSpace(code, i);
        const c = code[i];
        if (c === undefined || c === ';' || c === ',' || c === ')' || c === '}') break;
        if (c === '=' && code[i + 1] === '>') break;
        if (c === '{' && type !== '' && !/[|&:,<(=]$/.test(type)) break;
        if (c === '(' || c === '[' || c === '{') {
          const end = closing(code, i);
          type += code.slice(i, end).replace(/\s+/g, ' ');
          i = end;
        } else if (c === '<') {
          let d = 0;
          for (; i < code.length; i++) {
            if (code[i] === '<') d++;
            else if (code[i] === '>' && code[i - 1] !== '=' && --d === 0) break;
          }
          type += '<>';
          i++;
        } else {
          type += c;
          i++;
        }
      }
    }
    if (code[i] === '{') body = code.slice(i + 1, closing(code, i) - 1);
    else if (code[i] === '=' && code[i + 1] === '>') {
      const j = skipSpace(code, i + 2);
      if (code[j] === '{') body = code.slice(j + 1, closing(code, j) - 1);
      else if (!inType) body = null;
    }
    if (body === undefined) continue; // a signature: an interface's method, a function type
    const arrow = code[i] === '=';
    out.push({ name: (arrow ? assigned : name) ?? '(arrow)', body });
  }
  return out;
}

/** Whether a body starts by checking its ticket against actions named in full (literals, or a *_ACTIONS table). */
function checksFirst(body: string): boolean {
  return /^assertTicket\(ticket, (['"[]|[A-Z]+_ACTIONS\b)/.test(body.trimStart());
}

/** Executor entry points that do not check their ticket before anything else, and ticket checks that name a pattern. */
function executorProblems(files: Source[]): string[] {
  const out: string[] = [];
  for (const f of files.filter((f) => !['ticket.ts', 'policy/gate.ts'].includes(f.rel))) {
    for (const fn of ticketTakers(f)) {
      if (fn.body === null) out.push(`${f.rel}: ${fn.name} has no body to check its ticket in`);
      else if (!checksFirst(fn.body)) out.push(`${f.rel}: ${fn.name} does not check its ticket before anything else`);
    }
    for (const m of f.code.matchAll(/\bassertTicket\s*\(/g)) {
      for (const arg of callArgs(f, (m.index as number) + m[0].length - 1).slice(1, 2)) {
        if (/\*['"]/.test(arg)) out.push(`${f.rel}: a ticket check names a pattern (${arg})`);
        else if (!/^(['"[]|[A-Z]+_ACTIONS\b)/.test(arg)) out.push(`${f.rel}: a ticket check names actions that cannot be read (${arg})`);
      }
    }
    for (const m of f.plain.matchAll(/\b([A-Z]+_ACTIONS)\s*=\s*\{([^]*?)\}\s*as const/g)) if (/\*['"]/.test(m[2] as string)) out.push(`${f.rel}: ${m[1]} names a pattern`);
  }
  return sorted(out);
}

/**
 * An approval becomes approved or denied only in decideApproval (an executor: its ticket names that
 * decision on that approval); elsewhere a statement may only cancel one, and a new one is pending.
 */
function approvalDeciders(files: Source[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    const decide = /export function decideApproval\(/.exec(f.code);
    const decideBody = decide ? [decide.index, closing(f.code, f.code.indexOf('{', f.code.indexOf(')', decide.index)))] : [-1, -1];
    for (const m of f.plain.matchAll(/\bUPDATE\s+approvals\s+SET\b([^]*?)(["'`]\s*\)|$)/gi)) {
      const at = m.index as number;
      const cancels = /^\s*state\s*=\s*'cancelled'/i.test(m[1] as string);
      const inDecide = f.rel === 'engine/approvals.ts' && at > decideBody[0]! && at < decideBody[1]!;
      if (!cancels && !inDecide) out.push(`${f.rel}: changes an approval outside decideApproval`);
    }
    for (const m of f.plain.matchAll(/\bINSERT\s+(OR\s+\w+\s+)?INTO\s+approvals\b([^]*?)(["'`]\s*\)|$)/gi)) if (!/'pending'/.test(m[2] as string)) out.push(`${f.rel}: makes an approval that is not pending`);
  }
  return sorted(out);
}

// Separate programs the gated executors start (the job supervisor, the SQLite query child). They run
// only as child processes: nothing in src/ may import them, and the build must emit them as entries.
const CHILD_PROGRAMS = ['engine/sqlite-child.ts', 'engine/spawn/supervisor.ts', 'engine/spawn/net-bridge.ts', 'agent/runners/mcp-relay.ts'];

function childProgramImporters(files: Source[]): string[] {
  const bases = CHILD_PROGRAMS.map((p) => `/${p.split('/').pop()!.replace(/\.ts$/, '')}`);
  return sorted(files.flatMap((f) => importsOf(f).filter((i) => bases.some((b) => (i.spec ?? '').replace(/\.[cm]?[jt]s$/, '').endsWith(b))).map((i) => `${f.rel} imports ${i.spec}`)));
}

// The one spawn point: every process is started in src/engine/spawn/ (where the sandbox is applied
// and the spawn recorded), so nothing else may import a way to start one.
// The bridge (net-bridge.ts) is part of it: inside a sandbox whose process may reach only granted hosts,
// it is the sandbox's first process and starts the command that spawn point decided.
const PROCESS_STARTERS = new Set(['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']);
const SPAWN_POINT = ['engine/spawn/index.ts', 'engine/spawn/net-bridge.ts', 'engine/spawn/supervisor.ts'];

/** Values bound from a module: 'all' for a default, namespace, require() or import(); else the names. */
function valueBindings(i: Import): 'all' | string[] {
  if (i.clause === 'type' || i.clause === 'side') return [];
  if (i.how !== 'static' || !/^\{[^}]*\}$/.test(i.clause)) return 'all';
  return i.clause
    .slice(1, -1)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s && !/^type\b/.test(s))
    .map((s) => s.split(/\s+as\s+/)[0] as string);
}

const moduleIs = (spec: string | null, names: string[]) => spec !== null && names.some((n) => spec === n || spec === `node:${n}`);

function processStarters(files: Source[]): string[] {
  return sorted(
    files
      .filter((f) =>
        importsOf(f).some((i) => {
          if (moduleIs(i.spec, ['cluster'])) return valueBindings(i) === 'all' || (valueBindings(i) as string[]).length > 0;
          if (!moduleIs(i.spec, ['child_process'])) return false;
          const v = valueBindings(i);
          return v === 'all' || v.some((n) => PROCESS_STARTERS.has(n));
        }),
      )
      .map((f) => f.rel),
  );
}

// What can start a process or reach the network. A module that uses one must be an executor: its
// entry points take a ticket.
const CAPABILITY_MODULES = ['child_process', 'cluster', 'net', 'http', 'https', 'http2', 'tls', 'dgram', 'worker_threads'];

function ungatedCapabilities(files: Source[]): string[] {
  const out: string[] = [];
  for (const f of files.filter((f) => !CHILD_PROGRAMS.includes(f.rel))) {
    const uses = importsOf(f)
      .filter((i) => moduleIs(i.spec, CAPABILITY_MODULES) && (valueBindings(i) === 'all' || (valueBindings(i) as string[]).length > 0))
      .map((i) => i.spec as string);
    if (/(^|[^.\w$])fetch\s*\(|\bglobalThis\.fetch\b|\bnew\s+WebSocket\b/.test(f.code)) uses.push('fetch');
    if (uses.length && !/\bassertTicket\(ticket, /.test(f.code)) out.push(`${f.rel} uses ${sorted(uses).join(', ')} and is no gated executor`);
  }
  return sorted(out);
}

function typeCheckerSilencers(files: Source[]): string[] {
  return sorted(files.filter((f) => /@ts-ignore|@ts-nocheck|@ts-expect-error|eslint-disable/.test(f.text)).map((f) => f.rel));
}

// Reading files someone else controls goes through one bounded primitive (src/util/safe-read.ts):
// a raw read there could block on a FIFO, follow a link out of the project or read /dev/zero forever.
// Only reads of our own files are exempt, each with the reason it is trusted.
const FILE_READS = /\b(readFileSync|readFile|createReadStream|readSync|readdirSync|readdir|opendirSync|opendir|readv|readvSync)\s*\(|\bopenSync\([^,)]*\)|\bopenSync\([^,]*,\s*('r\+?'|"r\+?"|[\w.]*O_RDONLY|[\w.]*O_RDWR)/;
const TRUSTED_READS: Record<string, string> = {
  'util/safe-read.ts': 'the primitive itself',
  'policy/load.ts': 'policy/*.json shipped with the package',
  'version.ts': 'the package.json of shadowcode itself',
  'catalog/definition.ts': 'schemas/definition.schema.json shipped with the package, for the known keys',
  'boot.ts': "dist/cli.cjs of shadowcode itself and its code cache in the user's own cache directory",
  'store/settings.ts': 'settings.json in the 0700 profile directory',
  'store/sandbox-grants.ts': 'sandbox-grants.json in the 0700 profile directory, written by shadowcode sandbox allow/revoke',
  'store/secrets.ts': 'secrets.json in the 0700 profile directory, mode-checked first',
  'engine/daemon/files.ts': 'engine.token in the 0700 profile directory, owner- and mode-checked first',
  'engine/spawn/supervisor.ts': 'its spec on fd 4, written by the shadowcode process that started it',
  'engine/spawn/group.ts': '/proc/<pid>/stat of the processes below the leader of a group we started',
  'engine/spawn/holds.ts': 'its own registry of placeholders (sandbox-holds.*.json), written by it in the 0700 profile directory',
  'engine/spawn/fds.ts': '/proc/self/fdinfo written by the kernel (which of our descriptors a child would inherit), and /dev/null',
  'engine/spawn/bounds.ts': "/proc/self/mountinfo, /proc/self/cgroup and /proc/self/limits written by the kernel, and the pids cgroup folder's listing for our own cgroups",
  'engine/owners.ts': "/proc/PID/stat written by the kernel, and the temp directory's listing for our own run dirs",
  'console/codes.ts': 'console.json in the 0700 profile directory, written 0600 by the console itself',
  'console/server.ts': 'the page files of shadowcode itself, built into dist/console',
  'telemetry/stats.ts': 'its own export counters (telemetry/PID.json), written by it in the 0700 profile directory',
};

function rawReaders(files: Source[]): string[] {
  return sorted(files.filter((f) => FILE_READS.test(f.plain) || importsOf(f).some((i) => moduleIs(i.spec, ['fs/promises']) && i.clause !== 'type')).map((f) => f.rel));
}

// The page shows someone else's text through the same renderer as the terminal: that one module,
// which itself imports nothing, is all it may bundle from src/.
const PAGE_IMPORTS: Record<string, string> = { 'util/inert-text.ts': 'the one renderer of untrusted text, shared with the CLI' };

/** What the page imports beyond the renderer, what the renderer itself imports, and text parsed as HTML or code. */
function pageProblems(page: Source[], files: Source[]): string[] {
  const out: string[] = [];
  for (const rel of Object.keys(PAGE_IMPORTS)) {
    const f = files.find((x) => x.rel === rel);
    if (f && importsOf(f).length) out.push(`${rel}, bundled into the page, imports`);
  }
  for (const f of page) {
    const targets = importsOf(f).map((i) => (i.spec === null ? '(computed)' : relative('/src', resolve(dirname(join('/src', f.rel)), i.spec)).replace(/\.js$/, '.ts')));
    if (targets.some((x) => !PAGE_IMPORTS[x])) out.push(`${f.rel} imports`);
    if (/innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser|\beval\(|new Function|createContextualFragment|srcdoc/.test(f.code)) out.push(`${f.rel} parses text as HTML or code`);
  }
  return sorted(out);
}

// ─── the sources ─────────────────────────────────────────────────────────────────────────

/** Object literals that write a gate principal ({kind, owner, allow_write, allow_approvals}) outside policy/requests.ts. */
function principalWriters(files: Source[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    if (f.rel === 'policy/requests.ts') continue;
    for (const m of f.code.matchAll(/\{[^{}]*\}/g)) if (/\ballow_approvals\s*:/.test(m[0]) && /\bkind\s*:/.test(m[0])) out.push(`${f.rel}: writes a principal of its own`);
  }
  return sorted(out);
}

const src = load(join(ROOT, 'src'));
const bad = load(join(ROOT, 'test', 'fixtures', 'architecture'));
const files = src.files;

t.test('the scanner blanks comments and text, and keeps code where it was', async (t) => {
  const text = "const a = '// not a comment'; // a comment with assertTicket(ticket, 'x')\nconst b = `x ${f('y')} z`; /* mintTicket */ const r = /['{]/g; x = a / b / c;";
  const code = mask(text);
  t.equal(code.length, text.length, 'same length, same offsets');
  t.notMatch(code, /not a comment|assertTicket|mintTicket|\bx \$|\bz`/, 'comments and literal text are blank');
  t.match(code, /const b = ` {2}\$\{f\(' '\)\} {2}`;/, "a template's ${…} stays code");
  t.match(code, /x = a \/ b \/ c;$/, 'a division is not a regex');
  t.equal(closing(code, code.indexOf('${') + 1), code.indexOf("')}") + 3, 'brackets still pair up');
});

t.test('the control sources violate every rule, and nothing in src/ is among them', async (t) => {
  t.ok(bad.files.length >= 20 && bad.page.length >= 1, 'there are control sources');
  t.ok(src.files.length > 150 && src.page.length >= 1, 'and sources to check');
});

t.test('imports in src/ only point down the layer list', async (t) => {
  t.same(layerViolations(src.files), []);
  t.same(layerViolations(bad.files), [
    'console/reaches-cli.ts (console) imports cli/commands/decide.ts (cli)',
    'console/reaches-cli.ts (console) imports cli/context.ts (cli)',
    'engine/imports-computed.ts: a computed module specifier',
    'store/reaches-up.ts (store) imports agent/loop.ts (agent)',
    'store/reaches-up.ts (store) imports cli/main.ts (cli)',
    'store/reaches-up.ts (store) imports server/build.ts (server)',
  ], 'control: double quotes, export-from, require() and a computed import()');
});

t.test('nothing outside src/cli/ imports from it', async (t) => {
  t.same(cliImporters(src.files), []);
  t.same(cliImporters(bad.files), ['console/reaches-cli.ts imports cli/commands/decide.ts', 'console/reaches-cli.ts imports cli/context.ts', 'store/reaches-up.ts imports cli/main.ts'], 'control: a type, an import(), double quotes');
});

t.test('there is no import cycle in src/', async (t) => {
  t.same(importCycles(src.files), []);
  t.same(importCycles(bad.files), ['util/cycle-a.ts -> util/cycle-b.ts'], 'control: a type-only import and an export-from close a cycle; a lazy import() does not');
});

t.test('only src/schema/validate.ts imports the generated validators', async (t) => {
  t.same(validatorImporters(src.files), ['schema/validate.ts']);
  t.same(validatorImporters(bad.files), ['engine/own-validator.ts'], 'control: an import() of one');
});

t.test('only the gate mints tickets', async (t) => {
  t.same(ticketMinters(src.files), ['policy/gate.ts', 'ticket.ts']);
  t.same(ticketMinters(bad.files), ['engine/self-minted.ts', 'engine/ticket-namespace.ts', 'policy/gate.ts'], 'control: a call, and the module bound whole (the control gate mints, as the real one does)');
});

// No module other than the gate may write a decision row or hold a ticket it did not get from there.
t.test('decision rows are written only by the gate, and its tickets are minted after they are appended', async (t) => {
  t.same(decisionRowWriters(src.files), [], 'only the gate appends decision rows');
  t.same(decisionRowWriters(bad.files), [
    'agent/rows-builder.ts: builds audit rows with appendAuditRows',
    'catalog/raw-insert.ts: raw SQL writes the audit table',
    'engine/aliased-audit.ts: renames appendAudit',
    'engine/audit-namespace.ts: binds the audit module whole',
    'engine/decision-const.ts: appendAudit with a kind that is not a literal (KIND)',
    'engine/own-decision.ts: builds a decision row',
    'engine/own-decision.ts: decides outside the gate',
    'engine/writer-as-value.ts: uses appendAudit as a value',
    'server/deferred-decision.ts: deferAudit of a decision row',
  ], 'control: every way round the rule is reported');
  const gate = src.files.find((f) => f.rel === 'policy/gate.ts')!;
  t.same(gateOrderProblems(gate), [], 'inside admit, after the rows are appended; enforce decides through admit');
  t.same(gateOrderProblems(bad.files.find((f) => f.rel === 'policy/gate.ts')!), [
    '2 places mint tickets, not one',
    'tickets are not minted inside admit after its rows are appended',
    'enforce does not decide through admit',
  ], 'control: a gate that mints first, twice, and an enforce of its own');
});

// The executors this rule must see; a finder that stopped seeing them would pass every body it found.
const KNOWN_EXECUTORS = [
  'agent/runners/probe.ts: probeRunner',
  'client/connection.ts: open',
  'client/stdio.ts: constructor',
  'engine/approvals.ts: decideApproval',
  'engine/daemon/client.ts: open',
  'engine/spawn/index.ts: prepare',
  'engine/spawn/index.ts: startDirect',
  'engine/spawn/index.ts: startHelper',
  'engine/spawn/index.ts: startOwnProgram',
  'engine/spawn/index.ts: supervise',
  'catalog/store.ts: recorded',
  'store/secrets.ts: putDefinitionEnv',
].sort();

t.test('every executor entry point takes a ticket and checks it first, for its actions named in full', async (t) => {
  t.same(executorProblems(src.files), []);
  const seen = src.files.flatMap((f) => ticketTakers(f).map((fn) => `${f.rel}: ${fn.name}`));
  for (const name of KNOWN_EXECUTORS) t.ok(seen.includes(name), `${name} is seen as an executor`);
  t.ok(src.files.some((f) => /assertTicket\(ticket, 'cli:trust'\)/.test(f.plain)), 'changing trust is an executor');
  t.ok(src.files.some((f) => /assertTicket\(ticket, 'cli:secret\.set'\)/.test(f.plain)), 'storing a secret is an executor');
  t.same(executorProblems(bad.files), [
    'engine/arrow-executor.ts: runIt does not check its ticket before anything else',
    'engine/expression-executor.ts: run has no body to check its ticket in',
    'engine/late-check.ts: late does not check its ticket before anything else',
    'engine/late-check.ts: staticLate does not check its ticket before anything else',
    'engine/semicolon-return.ts: start does not check its ticket before anything else',
    "engine/wildcard.ts: SOME_ACTIONS names a pattern",
    "engine/wildcard.ts: a ticket check names a pattern ('*')",
    "engine/wildcard.ts: a ticket check names a pattern ('cli:model.*')",
  ], 'control: a late check, an arrow, a static method, a return type with ";", and patterns');
  t.same(
    bad.files.flatMap((f) => ticketTakers(f).map((fn) => `${f.rel}: ${fn.name}`)).filter((n) => n.startsWith('engine/not-executors.ts')),
    [],
    'control: a type, an interface and a property holding a ticket are not executors',
  );
});

// policy explain builds its requests with the same builders, so a request built anywhere else could drift from it.
t.test('gate requests name their principal only through policy/requests.ts', async (t) => {
  t.same(principalWriters(src.files), []);
  t.same(principalWriters(bad.files), ['engine/own-principal.ts: writes a principal of its own'], 'control: a request with a principal written in place');
});

t.test('an approval is approved or denied only by decideApproval', async (t) => {
  t.same(approvalDeciders(src.files), []);
  t.same(approvalDeciders(bad.files), ['cli/self-approve.ts: changes an approval outside decideApproval', 'cli/self-approve.ts: makes an approval that is not pending'], 'control: an UPDATE and an INSERT');
});

t.test('child programs are started by executors, never imported', async (t) => {
  const build = readFileSync(join(ROOT, 'scripts', 'build.mjs'), 'utf8');
  for (const prog of CHILD_PROGRAMS) t.ok(build.includes(`src/${prog}`), `${prog} is a build entry`);
  t.same(childProgramImporters(src.files), []);
  t.same(childProgramImporters(bad.files), ['engine/imports-child.ts imports ./spawn/supervisor.js', 'engine/imports-child.ts imports ./sqlite-child.js'], 'control');
});

t.test('only the spawn point imports the APIs that start a process', async (t) => {
  t.same(processStarters(src.files), SPAWN_POINT, 'src/engine/spawn/ starts every process');
  t.same(processStarters(bad.files), ['client/cluster-fork.ts', 'client/cp-default.ts', 'client/cp-mixed.ts', 'client/cp-namespace.ts', 'client/cp-require.ts'], 'control: a default, a namespace, a require, cluster, and spawn beside a type; types alone are no start');
});

t.test('process and network capabilities are reachable only through gated executors', async (t) => {
  t.same(ungatedCapabilities(src.files), []);
  t.same(ungatedCapabilities(bad.files), [
    'client/cluster-fork.ts uses node:cluster and is no gated executor',
    'client/cp-default.ts uses node:child_process and is no gated executor',
    'client/cp-mixed.ts uses node:child_process and is no gated executor',
    'client/cp-namespace.ts uses child_process and is no gated executor',
    'client/cp-require.ts uses node:child_process and is no gated executor',
    'register/fetches.ts uses fetch and is no gated executor',
    'register/http2.ts uses node:http2 and is no gated executor',
    'register/raw-socket.ts uses net and is no gated executor',
  ], 'control');
});

t.test('no file in src/ silences the type checker', async (t) => {
  t.same(typeCheckerSilencers(src.files), []);
  t.same(typeCheckerSilencers(bad.files), ['base/silenced.ts'], 'control');
});

t.test('files a project or a user controls are read only through the bounded primitive', async (t) => {
  t.same(rawReaders(src.files), Object.keys(TRUSTED_READS).sort(), 'only the primitive and reads of our own files use raw file reads');
  t.same(rawReaders(bad.files), ['engine/raw-read-open.ts', 'engine/raw-read-promises.ts', 'engine/raw-read.ts'], 'control: a namespaced read, an O_RDONLY open, node:fs/promises');
});

t.test("the console's page imports nothing but the text renderer, and never parses text as HTML", async (t) => {
  t.same(pageProblems(src.page, src.files), []);
  t.same(pageProblems(bad.page, bad.files), ['console/page/bad.ts imports', 'console/page/bad.ts parses text as HTML or code', 'util/inert-text.ts, bundled into the page, imports'], 'control: an import past the renderer, HTML, and a renderer that imports');
});
