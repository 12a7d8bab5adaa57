/*
 * Why a sandboxed process failed, when the sandbox is why: it named a path the sandbox hid or
 * showed read-only. Read from what the process said (the end of its output, bounded) and how it
 * ended, against the very command line it was started with; never guessed from a name alone.
 *
 *   explainFailure(line, output, code, ctx)
 *     the last limits.sandbox.explain_bytes of its output, line by line:
 *       EROFS / "Read-only file system"               ─► the absolute paths on that line
 *       ENOENT / "No such file or directory" / EACCES / "Permission denied" / "cannot access" ─► the same
 *       127 / "NAME: not found" / "command not found" ─► NAME looked up on the user's PATH
 *     ─► each path that exists on the host (for a write: its nearest existing folder) ─► what the
 *        start showed there (builder.mounts, the last mount at or above it):
 *          read-only + EROFS   ─► read_only   (a protected project path: no fix; a system folder: no fix)
 *          private (home, /tmp), nothing, or covered ─► hidden / secret / profile
 *          read-write, a link  ─► not the sandbox
 *     ─► at most three, each with the words and the exact `sandbox allow` that would show it
 */
import { lstatSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, normalize, resolve } from 'node:path';
import { type Mount, modeAt } from './builder.js';
import { findOnPath } from './sandbox.js';
import { within } from './state-paths.js';

export type BlockKind = 'read_only' | 'hidden' | 'secret' | 'profile' | 'protected' | 'system';

/** One path the sandbox stood in the way of, and what to do about it. */
export interface SandboxBlock {
  readonly path: string;
  readonly kind: BlockKind;
  /** What the process ran into: EROFS, ENOENT, EACCES, or a command not found (127). */
  readonly error: 'EROFS' | 'ENOENT' | 'EACCES' | 'not_found';
  /** In words, for the terminal, the model and a job's result. */
  readonly message: string;
  /** The exact command that would let the sandbox show it; null when nothing may (the profile, a protected path). */
  readonly fix: string | null;
}

export interface ExplainContext {
  readonly project: string | null;
  readonly profileDir: string | null;
  readonly home: string | undefined;
  /** The PATH the process had, to find a command it could not. */
  readonly path: string;
  /** policy/sandbox.json hidden, expanded. */
  readonly hidden: readonly string[];
  readonly systemReadOnly: readonly string[];
  /** Where it ran: a quoted relative path on an error line is resolved against it. */
  readonly cwd?: string;
  /** At most this many paths (3). */
  readonly max?: number;
  /** A stdio server: only its definition's sandbox key adds to what it sees, so that is the fix. */
  readonly server?: boolean;
}

const PATH_IN_TEXT = /(?:^|[\s'"`(=:,[])(\/[^\s'"`,;:()<>[\]{}|*?]+)/g;
const QUOTED_RELATIVE = /['\u2018`]([\w.-][^'\u2019`\s]*)['\u2019`]/g;
const ERRORS: Array<[RegExp, SandboxBlock['error']]> = [
  [/\bEROFS\b|read-only file system/i, 'EROFS'],
  [/\bEACCES\b|permission denied/i, 'EACCES'],
  [/\bENOENT\b|no such file or directory|cannot access|can't open|cannot open|not found|does not exist|failed to read/i, 'ENOENT'],
];
const NOT_FOUND = /(?:^|[\s:])([\w.+-]{1,128}): (?:command )?not found\b|^make(?:\[\d+\])?: ([\w.+-]{1,128}): No such file or directory|^env: '?([\w.+-]{1,128})'?: No such file or directory/gm;

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

const there = (p: string) => lstatSync(p, { throwIfNoEntry: false }) !== undefined;

/** The folder a grant should name for `p`: itself if a folder, else its folder, never the home or above (then the file itself). */
function grantable(p: string, home: string | undefined): string {
  let dir = p;
  try {
    if (!statSync(p).isDirectory()) dir = dirname(p);
  } catch {
    dir = dirname(p);
  }
  return home && within(home, dir) ? p : dir;
}

const quote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/**
 * The paths of a failed sandboxed start's output that the sandbox hid or showed read-only, each
 * with its fix; none when the sandbox was not why (or the process succeeded).
 */
export function explainFailure(mounts: readonly Mount[], output: string, code: number | null, ctx: ExplainContext): SandboxBlock[] {
  if (code === 0) return [];
  const seen = new Set<string>();
  const out: SandboxBlock[] = [];
  const max = ctx.max ?? 3;
  const cmd = (p: string, flag = '') =>
    ctx.server ? `declare it in the server's definition: sandbox: {${flag.includes('--write') ? 'write' : 'read'}: [${JSON.stringify(p)}]}, then store it and enable the new hash` : `shadowcode --project ${quote(ctx.project ?? '.')} sandbox allow ${quote(p)}${flag}`;
  const who = ctx.server ? 'this server' : 'sandboxed commands of this project';
  const consider = (raw: string, error: SandboxBlock['error']) => {
    if (out.length >= max) return;
    const path = normalize(raw.replace(/[.'"`]+$/, ''));
    if (!isAbsolute(path) || path === '/' || seen.has(`${error}\0${path}`)) return;
    seen.add(`${error}\0${path}`);
    // Nothing the project holds is hidden; only what exists out here can be shown.
    let at = path;
    if (error === 'EROFS') while (!there(at) && at !== '/') at = dirname(at);
    else if (!there(at)) return;
    if (at === '/') return;
    const r = real(at);
    const profile = ctx.profileDir ? real(ctx.profileDir) : null;
    if (profile && (within(at, profile) || within(r, profile))) {
      out.push({ path, kind: 'profile', error, message: `${path} is in shadowcode's profile, which no sandboxed process may see`, fix: null });
      return;
    }
    // What the start showed where the process looked (a placeholder it wrote in is gone by now).
    const m = modeAt(mounts, path) ?? modeAt(mounts, r);
    const hiddenBy = ctx.hidden.find((h) => within(at, h) || within(r, h));
    if (m?.mode === 'rw' || m?.mode === 'link') return;
    if (m?.mode === 'ro') {
      if (error !== 'EROFS') return; // read-only is not why it could not read or find it
      if (ctx.project && within(path, ctx.project)) {
        const rel = path.slice(ctx.project.length + 1);
        out.push({ path, kind: 'protected', error, message: `${path} is a protected path of the project (${rel.split('/')[0]}), which the sandbox keeps read-only so a command cannot plant what git or a coding host runs later; no grant changes that`, fix: null });
        return;
      }
      if (ctx.systemReadOnly.some((s) => within(path, s))) {
        out.push({ path, kind: 'system', error, message: `${path} is in a system folder, which the sandbox shows read-only`, fix: null });
        return;
      }
      const g = grantable(at, ctx.home);
      out.push({ path, kind: 'read_only', error, message: `the sandbox shows ${path} read-only (a toolchain, a cache or a folder granted read-only), so nothing run inside changes it for what you run outside; to let ${who} write ${g}, grant it`, fix: cmd(g, ' --write') });
      return;
    }
    // private (the home, /tmp), covered, or not shown at all.
    if ((hiddenBy || m?.mode === 'covered') && ctx.server) {
      out.push({ path, kind: 'secret', error, message: `${path} is one of the secret paths the sandbox hides (${hiddenBy ?? path}, policy/sandbox.json "hidden"), which no server definition can declare`, fix: null });
      return;
    }
    if (hiddenBy || m?.mode === 'covered') {
      out.push({ path, kind: 'secret', error, message: `${path} is one of the secret paths the sandbox hides (${hiddenBy ?? path}, policy/sandbox.json "hidden"); only a grant with --secret shows it, and every approval then names it`, fix: cmd(at, error === 'EROFS' ? ' --secret --write' : ' --secret') });
      return;
    }
    const g = grantable(at, ctx.home);
    const where = m?.mode === 'private' ? (ctx.home && within(at, ctx.home) ? 'your home is an empty private folder inside the sandbox' : '/tmp is a private, empty folder inside the sandbox') : 'the sandbox shows only the project, the system folders, your toolchains and what you granted';
    out.push({ path, kind: 'hidden', error, message: `the sandbox hid ${path}: ${where}; to show ${g} to ${who}${error === 'EROFS' ? ', writable' : ''}, grant it`, fix: cmd(g, error === 'EROFS' ? ' --write' : '') });
  };
  for (const line of output.split('\n')) {
    if (out.length >= max) break;
    const err = ERRORS.find(([re]) => re.test(line))?.[1];
    if (!err) continue;
    for (const m of line.matchAll(PATH_IN_TEXT)) consider(m[1] as string, err);
    if (ctx.cwd) for (const m of line.matchAll(QUOTED_RELATIVE)) if ((m[1] as string).includes('/') || (m[1] as string).startsWith('.')) consider(resolve(ctx.cwd, m[1] as string), err);
  }
  // A command the shell or make could not find: where it is on the user's PATH, if anywhere.
  if (code === 127 || /not found|No such file or directory/.test(output)) {
    for (const m of output.matchAll(NOT_FOUND)) {
      const name = m[1] ?? m[2] ?? m[3];
      const at = name ? findOnPath(name, ctx.path) : null;
      if (at) consider(at, 'not_found');
    }
  }
  return out;
}

/** The text of a job's result and the terminal: one line per path, with its fix. */
export function blockText(blocks: readonly SandboxBlock[]): string {
  return blocks.map((b) => `sandbox: ${b.message}${b.fix ? `: ${b.fix}` : ''}`).join('\n');
}
