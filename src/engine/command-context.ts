/*
 * What a command approval must show beside argv and directory: the files this
 * task changed so far, and which of them the command will run.
 *
 *   changes of the job (applied): its write tools', and what its commands, test jobs,
 *   background processes or coding CLI changed (recorded by its change watch,
 *   change-watch.ts, before the approval is built) ─► changed_files (project-relative, sorted)
 *   argv ─► the programs it runs, each with the folder it runs in: through the wrappers
 *           policy/commands.json lists (timeout, env, nice, xargs, sudo, …), shell scripts
 *           (sh/bash -c, also -lc and -ec; each command of the script, after `cd DIR`), npx and
 *           npm exec, and the package.json scripts npm run / npm test / yarn NAME run
 *           (limits.protection.command_unwrap_depth deep)
 *        ─► runners that read a file we know (npm/npx/yarn/pnpm/bun ─► package.json
 *           scripts from the nearest manifest up from where they run, with the script names
 *           whose text changed; make ─► Makefile, *.mk)
 *        ─► any word of those programs' command lines naming a changed file
 *        (each also through a link: a new `GNUmakefile -> docs/notes.txt` whose target changed)
 *   ─► runs_changed [{path, reason, diff}] (the diff from before the task to now) and one
 *      plain notice sentence
 *
 * An approval of ["npm","test"] looks harmless; after the task rewrote the
 * `test` script it is not, and the person approving must be told so. Wrapped in
 * `timeout 60 npm test` or `bash -lc "npm test"` it must say the same.
 */
import { lstatSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { CommandApproval } from '../../gen/types/command-approval.js';
import type { Commands } from '../../gen/types/commands.js';
import type { Policy } from '../policy/load.js';
import { type Db, sql } from '../store/db.js';
import { insideProject } from '../util/confine.js';
import { tryReadProjectFile } from '../util/safe-read.js';
import { unifiedDiff } from './diff.js';

/**
 * The changed file a path leads to through a link (a new `GNUmakefile -> docs/notes.txt`, or a
 * link in a folder on the way): the link itself is no change the watch compares, but what it
 * leads to is, and a command that reads the link runs it. Null when nothing on the path is a
 * link, or it leads outside the project or to no changed file.
 */
function throughLink(project: string, rel: string, changed: readonly string[]): string | null {
  if (!rel || rel.startsWith('..') || isAbsolute(rel)) return null;
  let real: string;
  try {
    real = realpathSync(join(project, rel));
  } catch {
    return null;
  }
  if (real === join(project, rel) || !insideProject(project, real)) return null;
  const target = slashed(relative(project, real));
  return changed.includes(target) ? target : null;
}

const PACKAGE_RUNNERS = new Set(['npm', 'npx', 'yarn', 'pnpm', 'bun', 'bunx', 'corepack']);
const MAKE = new Set(['make', 'gmake', 'bmake']);
const MAKEFILE = /^(gnu)?makefile$|\.mk$/i;

function slashed(p: string): string {
  return p.split('\\').join('/');
}

/** Script names whose text differs between two package.json texts (or every script when one side is not JSON). */
export function changedScripts(before: string | null, after: string | null): string[] {
  const scripts = (text: string | null): Record<string, unknown> | null => {
    if (text === null) return {};
    try {
      const v = JSON.parse(text) as { scripts?: unknown };
      return v && typeof v.scripts === 'object' && v.scripts !== null ? (v.scripts as Record<string, unknown>) : {};
    } catch {
      return null;
    }
  };
  const a = scripts(before);
  const b = scripts(after);
  if (a === null || b === null) return ['(the whole file: it is not valid JSON)'];
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).sort();
}

/** The files this job changed so far (applied writes and deletes), project-relative, sorted. */
export function jobChangedFiles(db: Db, jobId: string): string[] {
  const rows = sql(db, "SELECT DISTINCT path FROM changes WHERE job_id = ? AND state = 'applied' ORDER BY path").all(jobId) as Array<{ path: string }>;
  return rows.map((r) => slashed(r.path));
}

function beforeText(db: Db, jobId: string, rel: string): string | null | undefined {
  const r = sql(db, 'SELECT existed, content, kept FROM checkpoints WHERE job_id = ? AND path = ?').get(jobId, rel) as { existed: number; content: Buffer | null; kept: number } | undefined;
  if (r && r.existed && r.kept === 0) return undefined;
  return r && r.existed && r.content ? r.content.toString('utf8') : null;
}

/** A file's text now, its first `cap` bytes when it is larger (never "gone" for being large: a diff would show it deleted); null when it is not there. */
function nowText(project: string, rel: string, cap: number): string | null {
  try {
    return tryReadProjectFile(project, rel, { cap, kind: 'file', links: 'refuse', overflow: 'truncate' })?.bytes.toString('utf8') ?? null;
  } catch {
    return null;
  }
}

/** Whether the file is larger than `cap` bytes (its text above is cut). */
function largerThan(project: string, rel: string, cap: number): boolean {
  try {
    return lstatSync(join(project, rel)).size > cap;
  } catch {
    return false;
  }
}

/** Words of a command line, and of any shell script in it, that could name a file. */
function words(argv: readonly string[]): string[] {
  return argv.flatMap((a) => [a, ...a.split(/[\s;&|<>()'"`=]+/)]).filter((w) => w !== '' && w.length < 4096);
}

/** What a task changed so far: the paths, and each one's text before the task (null: it did not exist; undefined: its content was not kept). */
export interface ChangesSoFar {
  readonly changed: readonly string[];
  before(rel: string): string | null | undefined;
}

/** One program a command runs, with its command line and the folder it runs in. */
export interface Invocation {
  readonly name: string;
  readonly argv: readonly string[];
  readonly cwd: string;
}

/** What reading a command line needs from the policy: the wrappers and how deep to look. */
export type CommandPolicy = Pick<Policy, 'commands' | 'limits'>;

// Words that start or continue a shell command without being its program.
const SHELL_KEYWORDS = new Set(['if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'while', 'until', '!', '{', '}', 'case', 'esac', 'in', 'function']);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/**
 * The simple commands of a shell script, each as its words with quotes removed: split at
 * `;` `&` `|` newlines, parentheses, backquotes and `$(` outside quotes. Enough to find the
 * programs it starts; not a shell.
 */
export function scriptCommands(script: string): string[][] {
  const out: string[][] = [];
  let cmd: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  const endWord = () => {
    if (inWord) cmd.push(word);
    word = '';
    inWord = false;
  };
  const endCommand = () => {
    endWord();
    if (cmd.length) out.push(cmd);
    cmd = [];
  };
  for (let i = 0; i < script.length; i++) {
    const c = script[i] as string;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && i + 1 < script.length) word += script[++i];
      else word += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < script.length) {
      const n = script[++i] as string;
      if (n !== '\n') {
        word += n;
        inWord = true;
      }
    } else if (c === '#' && !inWord) {
      while (i + 1 < script.length && script[i + 1] !== '\n') i++;
    } else if (';&|\n()`'.includes(c) || (c === '$' && script[i + 1] === '(')) {
      endCommand();
      if (c === '$') i++;
    } else if (/\s/.test(c)) endWord();
    else {
      word += c;
      inWord = true;
    }
  }
  endCommand();
  return out;
}

/**
 * The programs a command runs: argv[0], and what each wrapper it is (policy/commands.json)
 * runs in turn, a shell script's commands, the package.json scripts npm and its kin run,
 * each with the folder it runs in. Depth-bounded: a loop of wrappers ends there.
 */
export function invocations(project: string, argv: readonly string[], cwd: string, policy: CommandPolicy): Invocation[] {
  const L = policy.limits.protection;
  const out: Invocation[] = [];
  const byName = new Map<string, Commands['wrappers'][number]>();
  for (const w of policy.commands.wrappers) for (const n of w.names) if (!byName.has(n)) byName.set(n, w);
  const script = (text: string, dir: string, depth: number) => {
    let here = dir;
    for (const words of scriptCommands(text.slice(0, L.command_script_bytes))) {
      let i = 0;
      while (i < words.length && (SHELL_KEYWORDS.has(words[i] as string) || ASSIGNMENT.test(words[i] as string))) i++;
      const rest = words.slice(i);
      if (rest[0] === 'cd') {
        // `cd DIR && npm test`: what follows in the script runs there.
        const to = rest[1];
        if (to && !to.startsWith('-') && !to.startsWith('~') && !to.includes('$')) here = resolve(here, to);
        continue;
      }
      visit(rest, here, depth);
    }
  };
  const visit = (args: readonly string[], dir: string, depth: number): void => {
    if (args.length === 0 || depth > L.command_unwrap_depth) return;
    const name = basename(args[0] as string);
    const w = byName.get(name);
    if (!w) {
      out.push({ name, argv: args, cwd: dir });
      return;
    }
    let here = dir;
    let i = 1;
    let operands = 0;
    let scriptNext = false;
    const opt = (list: readonly string[] | undefined, word: string): { hit: boolean; value: string | undefined; next: boolean } => {
      for (const o of list ?? []) {
        if (word === o) return { hit: true, value: args[i + 1], next: true };
        if (o.startsWith('--') && word.startsWith(`${o}=`)) return { hit: true, value: word.slice(o.length + 1), next: false };
        if (!o.startsWith('--') && o.length === 2 && word.startsWith(o) && word.length > 2 && !word.startsWith('--')) return { hit: true, value: word.slice(2), next: false };
      }
      return { hit: false, value: undefined, next: false };
    };
    for (; i < args.length; i++) {
      const a = args[i] as string;
      if (a === '--') {
        i++;
        break;
      }
      if (w.assignments && ASSIGNMENT.test(a)) continue;
      if (a === '-') continue;
      // An option starts with '-' (a shell's set options also with '+'). Another word is one of the
      // wrapper's operands (timeout's DURATION, flock's FILE) while it takes more, else the command.
      if (!(a[0] === '-' || (a[0] === '+' && w.script_flag))) {
        if (operands < (w.operands ?? 0)) {
          operands++;
          continue;
        }
        break;
      }
      const s = opt(w.script_options, a);
      if (s.hit) {
        if (s.value !== undefined) script(s.value, here, depth + 1);
        if (s.next) i++;
        continue;
      }
      const c = opt(w.cwd_options, a);
      if (c.hit) {
        if (c.value !== undefined) here = resolve(here, c.value);
        if (c.next) i++;
        continue;
      }
      const v = opt(w.value_options, a);
      if (v.hit) {
        if (v.next) i++;
        continue;
      }
      if (w.script_flag && /^-[A-Za-z]+$/.test(a) && a.includes(w.script_flag)) scriptNext = true;
    }
    // Recorded with the folder it runs in, once its own options have said which.
    out.push({ name, argv: args, cwd: here });
    if (scriptNext) {
      if (typeof args[i] === 'string') script(args[i] as string, here, depth + 1);
      return;
    }
    for (const e of w.exec_words ?? []) {
      for (let k = i; k < args.length; k++) {
        if (args[k] !== e) continue;
        const end = args.findIndex((x, j) => j > k && (x === ';' || x === '+'));
        visit(args.slice(k + 1, end < 0 ? args.length : end), here, depth + 1);
      }
    }
    const first = args[i];
    if (first !== undefined && (w.exec_subcommands ?? []).includes(first)) {
      // The subcommand's own options, then the command it runs.
      let k = i + 1;
      for (; k < args.length; k++) {
        const a = args[k] as string;
        if (a === '--') {
          k++;
          break;
        }
        if (!a.startsWith('-')) break;
        const v = opt(w.value_options, a);
        if (v.hit && v.next) k++;
      }
      visit(args.slice(k), here, depth + 1);
      return;
    }
    const scriptName = first === undefined ? null : (w.script_subcommands ?? []).includes(first) ? (args[i + 1] ?? null) : Object.hasOwn(w.named_scripts ?? {}, first) ? ((w.named_scripts ?? {})[first] ?? null) : w.other_words_run_scripts ? first : null;
    if (scriptName !== null) {
      // npm runs pre<name>, <name> and post<name>, from the nearest package.json up from where it runs.
      const scripts = packageScripts(project, here, L.command_script_bytes);
      for (const n of [`pre${scriptName}`, scriptName, `post${scriptName}`]) {
        const text = scripts?.scripts[n];
        if (typeof text === 'string') script(text, scripts?.dir ?? here, depth + 1);
      }
      return;
    }
    if (w.command === false) return;
    visit(args.slice(i), here, depth + 1);
  };
  visit(argv, cwd, 0);
  return out;
}

/** The scripts of the nearest package.json from `dir` up to the project, read as they are now; null when there is none. */
function packageScripts(project: string, dir: string, cap: number): { dir: string; scripts: Record<string, unknown> } | null {
  for (let d = dir; insideProject(project, d); d = dirname(d)) {
    const rel = relative(project, join(d, 'package.json'));
    let text: string | undefined;
    try {
      text = tryReadProjectFile(project, rel, { cap, kind: 'manifest', overflow: 'truncate' })?.bytes.toString('utf8');
    } catch {
      return null;
    }
    if (text !== undefined) {
      try {
        const v = JSON.parse(text) as { scripts?: unknown };
        return { dir: d, scripts: v && typeof v.scripts === 'object' && v.scripts !== null ? (v.scripts as Record<string, unknown>) : {} };
      } catch {
        return null;
      }
    }
    if (d === project) break;
  }
  return null;
}

/** The approval of a native task's run_command: the job's own recorded changes. */
export function commandContext(db: Db, project: string, jobId: string, argv: readonly string[], cwd: string, cap: number, policy: CommandPolicy): CommandApproval {
  const action = commandContextOf(project, { changed: jobChangedFiles(db, jobId), before: (rel) => beforeText(db, jobId, rel) }, argv, cwd, cap, policy);
  // The change watch stopped at a limit while the task ran: the list is not complete, and a file
  // this command runs may have changed unseen (a command that makes 20,000 files first).
  const limited = sql(db, "SELECT body FROM job_events WHERE job_id = ? AND kind = 'changes_limited' AND json_extract(body, '$.incomplete') = 1 ORDER BY seq DESC LIMIT 1").get(jobId) as { body: string } | undefined;
  if (!limited) return action;
  const reason = (JSON.parse(limited.body) as { reason?: string }).reason ?? 'a limit was reached';
  const incomplete = `The files this task changed could not all be compared (${reason}): what changed past that is not listed, and this command may run it. Check the project before approving.`;
  return { ...action, notice: action.notice ? `${action.notice} ${incomplete}` : incomplete };
}

export function commandContextOf(project: string, known: ChangesSoFar, argv: readonly string[], cwd: string, cap: number, policy: CommandPolicy): CommandApproval {
  const changed = [...known.changed].map(slashed).sort();
  const runs: CommandApproval['runs_changed'] = [];
  const add = (path: string, reason: string) => {
    if (!runs.some((r) => r.path === path)) runs.push({ path, reason });
  };
  const invoked = invocations(project, argv, cwd, policy);
  const all = [...words(argv), ...invoked.flatMap((v) => words(v.argv))];
  const progs = invoked.map((v) => v.name);
  // npm and its kin run package.json scripts from the nearest manifest up from where they run, and the root's.
  for (const v of invoked) {
    const tool = PACKAGE_RUNNERS.has(v.name) ? v.name : v.name === 'node' && v.argv.includes('--run') ? 'node' : null;
    if (!tool) continue;
    const cwdRel = slashed(relative(project, v.cwd));
    const manifest = (path: string, via: string) => {
      const names = changedScripts(known.before(path) ?? null, nowText(project, path, cap));
      const named = names.length ? `its changed script${names.length === 1 ? '' : 's'} ${names.map((n) => JSON.stringify(n)).join(', ')}` : 'its scripts and install hooks';
      add(path, `${tool} runs scripts from ${via} which this task changed (${named})`);
    };
    for (const path of changed.filter((p) => basename(p).toLowerCase() === 'package.json')) {
      const dir = slashed(dirname(path));
      if (dir !== '.' && !(cwdRel === dir || cwdRel.startsWith(`${dir}/`))) continue;
      manifest(path, `${path},`);
    }
    // A manifest on the way up that is a link to a changed file.
    for (let d = v.cwd; insideProject(project, d); d = dirname(d)) {
      const rel = slashed(relative(project, join(d, 'package.json')));
      const target = throughLink(project, rel, changed);
      if (target) manifest(target, `${rel}, a link to ${target},`);
      if (d === project) break;
    }
  }
  const make = progs.find((p) => MAKE.has(p));
  if (make) {
    for (const path of changed.filter((p) => MAKEFILE.test(basename(p)))) add(path, `${make} reads ${path}, which this task changed, and runs its rules`);
    // The makefile make picks where it runs, when it is a link to a changed file.
    for (const v of invoked.filter((i) => MAKE.has(i.name))) {
      for (const name of ['GNUmakefile', 'makefile', 'Makefile']) {
        const rel = slashed(relative(project, join(v.cwd, name)));
        const target = throughLink(project, rel, changed);
        if (target) add(target, `${make} reads ${rel}, a link to ${target}, which this task changed, and runs its rules`);
      }
    }
  }
  for (const w of all) {
    const abs = isAbsolute(w) ? w : resolve(cwd, w);
    const rel = slashed(relative(project, abs));
    if (changed.includes(rel)) add(rel, `the command names ${rel}, which this task changed`);
    else if (!isAbsolute(w) && changed.includes(slashed(join(w)))) add(slashed(join(w)), `the command names ${slashed(join(w))}, which this task changed`);
    else {
      const target = throughLink(project, rel, changed);
      if (target) add(target, `the command names ${rel}, a link to ${target}, which this task changed`);
    }
  }
  runs.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const r of runs) r.diff = changeDiff(project, known, r.path, cap);
  const notice = runs.length
    ? `This command runs code this task changed: ${runs.map((r) => r.reason).join('; ')}. Review those changes before approving.`
    : null;
  // Named up to the limit, the rest counted: a task that made thousands of files would bury the approval. Every file the command runs is in runs_changed whatever the limit.
  const shown = policy.limits.jobs.approval_changed_files;
  const more = changed.length - shown;
  return { argv: [...argv], cwd, changed_files: more > 0 ? changed.slice(0, shown) : changed, ...(more > 0 ? { changed_files_more: more } : {}), runs_changed: runs, notice };
}

/** What the task did to one file it changed, as a unified diff from before the task to now, cut at `cap` characters. */
function changeDiff(project: string, known: ChangesSoFar, rel: string, cap: number): string {
  const before = known.before(rel);
  const now = nowText(project, rel, cap);
  if (before === undefined) return `--- a/${rel}\n+++ ${now === null ? '/dev/null' : `b/${rel}`}\n@@ its content before the task was not kept (past the snapshot limits) @@\n`;
  const diff = unifiedDiff(before ?? '', now ?? '', before === null ? '/dev/null' : `a/${rel}`, now === null ? '/dev/null' : `b/${rel}`);
  const shown = diff.length > cap ? `${diff.slice(0, cap)}\n… diff cut at ${cap} characters\n` : diff;
  return now !== null && largerThan(project, rel, cap) ? `${shown}… ${rel} is larger than ${cap} bytes: only its start is compared here, and the rest is not shown\n` : shown;
}
