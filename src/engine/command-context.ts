/*
 * What a command approval must show beside argv and directory: the files this
 * task changed so far, and which of them the command will run.
 *
 *   changes of the job (applied): its write tools', and what its commands, test jobs,
 *   background processes or coding CLI changed (recorded by its change watch,
 *   change-watch.ts, before the approval is built) ─► changed_files (project-relative, sorted)
 *   argv (and each command of a `sh -c` script) ─► runners that read a file we know
 *           (npm/npx/yarn/pnpm/bun ─► package.json scripts, with the script names whose
 *           text changed; make ─► Makefile, *.mk)
 *        ─► any argv word (or a word inside `sh -c "…"`) naming a changed file
 *   ─► runs_changed [{path, reason, diff}] (the diff from before the task to now) and one
 *      plain notice sentence
 *
 * An approval of ["npm","test"] looks harmless; after the task rewrote the
 * `test` script it is not, and the person approving must be told so.
 */
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { CommandApproval } from '../../gen/types/command-approval.js';
import { type Db, sql } from '../store/db.js';
import { tryReadProjectFile } from '../util/safe-read.js';
import { unifiedDiff } from './diff.js';

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

function nowText(project: string, rel: string, cap: number): string | null {
  try {
    return tryReadProjectFile(project, rel, { cap, kind: 'file', links: 'refuse' })?.bytes.toString('utf8') ?? null;
  } catch {
    return null;
  }
}

/** Words of the argv, and of any shell script in it, that could name a file. */
function words(argv: readonly string[]): string[] {
  return argv.flatMap((a) => [a, ...a.split(/[\s;&|<>()'"`=]+/)]).filter((w) => w !== '' && w.length < 4096);
}

/** What a task changed so far: the paths, and each one's text before the task (null: it did not exist; undefined: its content was not kept). */
export interface ChangesSoFar {
  readonly changed: readonly string[];
  before(rel: string): string | null | undefined;
}

const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh']);

/** The programs a command runs: argv[0], and for `sh -c SCRIPT` the first word of each command in the script. */
function programs(argv: readonly string[]): string[] {
  const out = [basename(argv[0] ?? '')];
  const c = argv.indexOf('-c');
  if (SHELLS.has(out[0] as string) && c > 0 && typeof argv[c + 1] === 'string') {
    for (const part of (argv[c + 1] as string).split(/&&|\|\||[;&|\n()]/)) {
      const first = part.trim().split(/\s+/).find((w) => w !== '' && !/^\w+=/.test(w));
      if (first) out.push(basename(first.replace(/^['"]|['"]$/g, '')));
    }
  }
  return [...new Set(out)];
}

/** The approval of a native task's run_command: the job's own recorded changes. */
export function commandContext(db: Db, project: string, jobId: string, argv: readonly string[], cwd: string, cap: number): CommandApproval {
  return commandContextOf(project, { changed: jobChangedFiles(db, jobId), before: (rel) => beforeText(db, jobId, rel) }, argv, cwd, cap);
}

export function commandContextOf(project: string, known: ChangesSoFar, argv: readonly string[], cwd: string, cap: number): CommandApproval {
  const changed = [...known.changed].map(slashed).sort();
  const runs: CommandApproval['runs_changed'] = [];
  const add = (path: string, reason: string) => {
    if (!runs.some((r) => r.path === path)) runs.push({ path, reason });
  };
  const cwdRel = slashed(relative(project, cwd));
  const all = words(argv);
  const progs = programs(argv);
  const tool = progs.find((p) => PACKAGE_RUNNERS.has(p)) ?? (progs.includes('node') && all.includes('--run') ? 'node' : null);
  // npm and its kin run package.json scripts from the nearest manifest up the tree, and the root's.
  if (tool) {
    for (const path of changed.filter((p) => basename(p).toLowerCase() === 'package.json')) {
      const dir = slashed(dirname(path));
      if (dir !== '.' && !(cwdRel === dir || cwdRel.startsWith(`${dir}/`))) continue;
      const names = changedScripts(known.before(path) ?? null, nowText(project, path, cap));
      const named = names.length ? `its changed script${names.length === 1 ? '' : 's'} ${names.map((n) => JSON.stringify(n)).join(', ')}` : 'its scripts and install hooks';
      add(path, `${tool} runs scripts from ${path}, which this task changed (${named})`);
    }
  }
  const make = progs.find((p) => MAKE.has(p));
  if (make) {
    for (const path of changed.filter((p) => MAKEFILE.test(basename(p)))) add(path, `${make} reads ${path}, which this task changed, and runs its rules`);
  }
  for (const w of all) {
    const abs = isAbsolute(w) ? w : resolve(cwd, w);
    const rel = slashed(relative(project, abs));
    if (changed.includes(rel)) add(rel, `the command names ${rel}, which this task changed`);
    else if (!isAbsolute(w) && changed.includes(slashed(join(w)))) add(slashed(join(w)), `the command names ${slashed(join(w))}, which this task changed`);
  }
  runs.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const r of runs) r.diff = changeDiff(project, known, r.path, cap);
  const notice = runs.length
    ? `This command runs code this task changed: ${runs.map((r) => r.reason).join('; ')}. Review those changes before approving.`
    : null;
  return { argv: [...argv], cwd, changed_files: changed, runs_changed: runs, notice };
}

/** What the task did to one file it changed, as a unified diff from before the task to now, cut at `cap` characters. */
function changeDiff(project: string, known: ChangesSoFar, rel: string, cap: number): string {
  const before = known.before(rel);
  const now = nowText(project, rel, cap);
  if (before === undefined) return `--- a/${rel}\n+++ ${now === null ? '/dev/null' : `b/${rel}`}\n@@ its content before the task was not kept (past the snapshot limits) @@\n`;
  const diff = unifiedDiff(before ?? '', now ?? '', before === null ? '/dev/null' : `a/${rel}`, now === null ? '/dev/null' : `b/${rel}`);
  return diff.length > cap ? `${diff.slice(0, cap)}\n… diff cut at ${cap} characters\n` : diff;
}
