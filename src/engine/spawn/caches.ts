/*
 * Package managers' caches inside the sandbox: read what the user has, write somewhere private
 * to the project, so that nothing a sandboxed command downloads or writes can end up in what
 * the user later installs outside the sandbox (a poisoned tarball in ~/.npm, a crate source
 * rewritten in ~/.cargo/registry).
 *
 *   cachePlan(project, env, policy, limits) ─► per cache of policy/sandbox.json `caches`:
 *     the user's cache (the first set variable, else the first path that exists, else the last;
 *     a tool that follows XDG_CACHE_HOME lists `$XDG_CACHE_HOME/<its folder>` in its own order)
 *     ─► the project's own folder: $XDG_CACHE_HOME/shadowcode/sandbox/<hash of the project>/<name>
 *        (checked at each start, 0700; kept between runs, outside the project and the profile);
 *        shown read-write once, the caches folder whole, each cache a link into it
 *     ─► where no link can be made (in a folder shown read-only), and a seeded cache (the host
 *        fills it): <hash>.bound/<name> instead, bound at the cache's path on its own; that
 *        folder is never shown whole
 *     ─► none at all where a sandbox could change the caches folder or a folder on the way to it
 *        (the project, a place granted writable, through a link anywhere on the way)
 *     ─► private: that folder read-write at the cache's path (only inside the home, which is
 *                 private anyway; the tool reads one cache, the user's is not shown)
 *        seeded:  the same, first filled with copies (never links, never through one, on either
 *                 side) of the files of the user's `seed` folders it lacks, again whenever those
 *                 folders changed, and only from a cache no sandbox can change (cargo's registry:
 *                 an offline build keeps finding what the user downloaded)
 *        beside:  the user's cache read-only at its path, the private folder read-write at its
 *                 own, and `env` inside pointing the tool at both ({private}, {user}): Go's
 *                 module cache with the user's as a file proxy, Maven's tail, Gradle's read-only
 *                 dependency cache
 *
 * bubblewrap 0.8 has no overlay, and a mount made inside the sandbox would need a capability
 * the sandbox never has (docs/sandbox.md, "Package caches"); so a cache is either the user's,
 * read-only, or the project's own.
 */
import { createHash } from 'node:crypto';
import { chownSync, closeSync, constants, copyFileSync, lstatSync, lutimesSync, mkdirSync, readlinkSync, renameSync, rmSync, type Stats, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join } from 'node:path';
import type { Sandbox as SandboxPolicy } from '../../../gen/types/sandbox.js';
import { realOrSelf } from '../../util/confine.js';
import { listDirNoFollow, openFolderNoFollow, readUserFile } from '../../util/safe-read.js';
import { absentInHome, type HomeLook, usableHome, within } from './state-paths.js';
import { placeOf } from './toolchains.js';

export interface CacheBind {
  readonly name: string;
  readonly mode: 'private' | 'beside' | 'seeded';
  /** The user's cache. */
  readonly user: string;
  /** The project's own folder, on the host. */
  readonly private: string;
  /** Where the private folder is shown inside (the user's path, or its own for beside). */
  readonly at: string;
  /** The policy's entry that named the user's cache (`$XDG_CACHE_HOME/pip`, `~/.cache/pip`). */
  readonly from: string;
  /** The user's cache is shown read-only at its path (beside). */
  readonly userShown: boolean;
  /** Kept apart from the caches folder and bound on its own (a seeded cache: the host fills it). */
  readonly own?: true;
  /** Seeded: what was not copied because the walk reached limits.sandbox.cache_seed_entries. */
  readonly seedIncomplete?: true;
}

export interface CachePlan {
  readonly binds: readonly CacheBind[];
  /** The folder all of the project's private caches are in (cacheRoot): bound once, read-write, at its own path. */
  readonly root?: string;
  /**
   * The folder a cache is bound from where its path cannot be a link (aloneOf): made, and filled for a
   * seeded cache, when a start needs it; in a dry plan (sandbox show) only named.
   */
  readonly alone?: (b: CacheBind) => string;
  /** Variables set inside the sandbox (beside caches). */
  readonly env: Readonly<Record<string, string>>;
  /** Caches whose path the sandbox does not give the project's folder, and why (sandbox show). */
  readonly notKept?: readonly CacheNotKept[];
  /** Why no cache is kept for this project at all (sandbox show); absent where the caches folder is used. */
  readonly refused?: CachesRefused;
}

export interface CachesRefused {
  /** The caches folder of the project. */
  readonly folder: string;
  readonly why: 'in the project' | 'hidden' | 'a link' | 'a sandbox can change it' | 'another user can change it';
  /** The folder on the way that decided it. */
  readonly at: string;
}

export interface CacheNotKept {
  readonly name: string;
  /** Where the tool writes. */
  readonly path: string;
  readonly from: string;
  readonly why: 'outside the home' | 'in the project' | 'covers the home' | 'hidden';
}

export const NO_CACHES: CachePlan = Object.freeze({ binds: [], env: {} });

/** Each project's caches folder, by where caches go and the project: a name only, worked out once. */
const roots = new Map<string, string>();

/** Where a project's private caches live: $XDG_CACHE_HOME (or ~/.cache) /shadowcode/sandbox/<hash>. */
export function cacheRoot(project: string, env: Record<string, string | undefined>): string | null {
  const home = usableHome(env.HOME);
  const xdg = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : home ? join(home, '.cache') : null;
  if (!xdg) return null;
  const key = `${xdg}\0${project}`;
  let root = roots.get(key);
  if (root === undefined) roots.set(key, (root = join(xdg, 'shadowcode', 'sandbox', createHash('sha256').update(project).digest('hex').slice(0, 16))));
  return root;
}

/**
 * The user's cache path of one entry, and the entry that named it: the first set variable (an
 * unset, empty or relative one is passed over, and so is `~/x` unless the tool itself reads that
 * as the home: `tilde`), else the first path that exists, else the last path.
 */
function userPath(alts: readonly string[], env: Record<string, string | undefined>, home: string | undefined, absent: (p: string) => boolean, tilde: readonly string[]): { at: string; from: string } | null {
  let last: { at: string; from: string } | null = null;
  for (const alt of alts) {
    const at = placeOf(alt, env, home, tilde.includes(alt));
    if (!at) continue;
    if (alt.startsWith('$')) return { at, from: alt };
    if (!absent(at) && lstatSync(at, { throwIfNoEntry: false })) return { at, from: alt };
    last = { at, from: alt };
  }
  return last;
}

/**
 * Makes a private folder, or checks the one there is a folder (a link or anything else in its place is
 * removed first: bwrap would follow a link there on the host); what root makes for a sandbox another
 * user starts becomes that user's. Checked at every start: a folder removed meanwhile is made again.
 */
function ensureDir(dir: string, owner: number | undefined, look: HomeLook): boolean {
  const there = lstatSync(dir, { throwIfNoEntry: false });
  if (there?.isDirectory()) return false;
  if (there) rmSync(dir, { force: true });
  const first = mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (first) look.made(first);
  if (first && owner !== undefined && owner !== process.getuid?.()) {
    for (let d = dir; d.length >= first.length; d = dirname(d)) chownSync(d, owner, owner);
  }
  return first !== undefined;
}

const ident = (p: string): string => {
  const st = statSync(p, { throwIfNoEntry: false });
  return st ? `${st.ino}:${st.mtimeMs}:${st.ctimeMs}` : '-';
};

/** What a seed's source looks like now: each seed folder and the folders right inside it (one per registry). */
function seedStamp(user: string, seed: readonly string[]): string {
  const parts: string[] = [];
  for (const s of seed) {
    const dir = join(user, s);
    parts.push(`${s}=${ident(dir)}`);
    for (const e of listDirNoFollow(dir) ?? []) if (e.kind === 'dir') parts.push(`${s}/${e.name}=${ident(join(dir, e.name))}`);
  }
  return parts.join('\n');
}

const seeded = new Map<string, string>();

/**
 * Copies into the folder open on `to` the files of `from` it lacks (folders made, files copied with
 * their times, links skipped: a link would lead back into the user's cache). Returns false when the
 * walk stopped at `max`. Another sandbox of the project may be running with this cache read-write
 * and swap any folder in it for a link at any moment: so each name is made and entered through the
 * descriptor of the folder it is in (/proc/self/fd/N/name: that exact folder, whatever its path
 * leads to now), each folder entered is opened with O_NOFOLLOW, and a file is made only where
 * nothing is (COPYFILE_EXCL: O_EXCL fails on a link too). Nothing is written outside the cache.
 */
function copyMissing(from: number, to: number, budget: { left: number }): boolean {
  // A listing opens nothing but the folder; entries keep the kind it gives (a link is a link, never followed).
  const entries = listDirNoFollow(`/proc/self/fd/${from}`);
  if (!entries) return true;
  for (const e of entries) {
    if (--budget.left < 0) return false;
    const src = `/proc/self/fd/${from}/${e.name}`;
    const dst = `/proc/self/fd/${to}/${e.name}`;
    if (e.kind === 'dir') {
      // The user's side is entered the same way: a link left there (through a grant since revoked) is never followed.
      const srcDir = openFolderNoFollow(src);
      if (srcDir === null) continue;
      try {
        try {
          mkdirSync(dst, { mode: 0o700 });
        } catch {
          /* there already: entered only if it is a folder */
        }
        const sub = openFolderNoFollow(dst);
        if (sub === null) continue;
        try {
          if (!copyMissing(srcDir, sub, budget)) return false;
        } finally {
          closeSync(sub);
        }
      } finally {
        closeSync(srcDir);
      }
    } else if (e.kind === 'file') {
      try {
        copyFileSync(src, dst, constants.COPYFILE_EXCL);
        const st = statSync(src);
        lutimesSync(dst, st.atime, st.mtime);
      } catch {
        /* there already, gone meanwhile, or copied by a parallel start */
      }
    }
  }
  return true;
}

/** Fills a seeded cache with what it lacks of the user's, when the user's changed since the last fill. */
function seed(user: string, priv: string, folders: readonly string[], stampFile: string, max: number): boolean {
  // The file keeps the stamp's digest: a fixed size to read back, whatever the user's cache holds.
  const stamp = createHash('sha256').update(seedStamp(user, folders)).digest('hex');
  if (seeded.get(stampFile) === stamp) return true;
  let before = '';
  try {
    before = readUserFile(stampFile, { cap: stamp.length, kind: 'cache seed stamp', overflow: 'truncate' }).bytes.toString('utf8');
  } catch {
    /* never seeded */
  }
  if (before === stamp) {
    seeded.set(stampFile, stamp);
    return true;
  }
  const budget = { left: max };
  let complete = true;
  const top = openFolderNoFollow(priv);
  if (top === null) return false;
  try {
    for (const s of folders) {
      try {
        mkdirSync(`/proc/self/fd/${top}/${s}`, { mode: 0o700 });
      } catch {
        /* there already */
      }
      const from = openFolderNoFollow(join(user, s));
      if (from === null) continue;
      const sub = openFolderNoFollow(`/proc/self/fd/${top}/${s}`);
      try {
        if (sub !== null && !copyMissing(from, sub, budget)) complete = false;
      } finally {
        closeSync(from);
        if (sub !== null) closeSync(sub);
      }
    }
  } finally {
    closeSync(top);
  }
  if (complete) {
    // A new file renamed over the stamp: whatever is at its name (a link) is replaced, never written through.
    const next = `${stampFile}.${process.pid}.${Date.now()}`;
    writeFileSync(next, stamp, { mode: 0o600, flag: 'wx' });
    renameSync(next, stampFile);
    seeded.set(stampFile, stamp);
  }
  return complete;
}

const fill = (text: string, priv: string, user: string) => text.replaceAll('{private}', priv).replaceAll('{user}', user);

/**
 * The caches of a sandboxed start in `project`: what to bind where, and the variables to set.
 * `avoid`: paths no cache may be (hidden paths, the profile): such a cache is left alone. `dry`
 * (sandbox show): nothing is made or copied. `owner`: the user the sandbox runs as, when root
 * prepares it for another one. `look`: the start's listing of the home (absentInHome), taken right
 * before; what is made here is added to it.
 */
export function cachePlan(project: string | null, env: Record<string, string | undefined>, policy: SandboxPolicy, seedEntries: number, avoid: readonly string[], o: { dry?: boolean; owner?: number; look?: HomeLook; writable?: readonly string[] } = {}): CachePlan {
  const home = usableHome(env.HOME);
  if (!project || !home) return NO_CACHES;
  const root = cacheRoot(project, env);
  if (!root) return NO_CACHES;
  const refuse = (why: CachesRefused['why'], at: string): CachePlan => ({ ...NO_CACHES, refused: { folder: root, why, at } });
  if (within(root, project)) return refuse('in the project', project);
  const rootReal = realFrom(root);
  const hiddenAt = avoid.find((a) => within(root, a) || within(rootReal, a));
  if (hiddenAt) return refuse('hidden', hiddenAt);
  // No sandbox may be able to change the caches folder, its `.bound` sibling or any folder above
  // them: the host makes and fills folders there, and bwrap binds from there. Where one of those
  // really lies in the project (~/.cache a link into it) or in a place granted writable (~/.cache
  // itself), or the caches folder is a link (never one we made), the caches are not kept.
  const open = [realOrSelf(project), project, ...(o.writable ?? [])];
  const bound = `${root}.bound`;
  const below = [root, bound].map((p) => lstatSync(p, { throwIfNoEntry: false }));
  const linked = [root, bound].find((_, i) => below[i]?.isSymbolicLink());
  if (linked) return refuse('a link', linked);
  if (reachable(dirname(root), open) || [root, bound].some((p, i) => inPlaces(below[i] ? realOrSelf(p) : p, open))) return refuse('a sandbox can change it', dirname(root));
  // Also where a link on the way lies in such a place, though neither the path as written nor where
  // it ends up does (~/.cache ─► project/hop ─► ~/cachedir): a sandbox may point it elsewhere. Nor
  // may another user: a folder of theirs on the way, or one anyone may write in, lets them swap a
  // folder for a link between our checks and bwrap's bind (a sticky one, like /tmp, does not).
  const step = changeableStep([root, bound], open, o.owner);
  if (step) return refuse(step.why, step.at);
  // A folder missing now may be made by another user before we make it (in a sticky folder like
  // /tmp, or a sticky caches folder for `.bound`): what we then make would be in theirs. So the way
  // is looked at again once a folder was made here (before anything is copied there), and at the end.
  const fresh = !o.dry && below.some((st) => !st);
  const binds: CacheBind[] = [];
  const notKept: CacheNotKept[] = [];
  const vars: Record<string, string> = {};
  const absent = o.look ?? absentInHome(home);
  for (const [name, c] of Object.entries(policy.caches)) {
    const found = userPath(c.path, env, home, absent, c.tilde ?? []);
    if (!found) continue;
    const { at: user, from } = found;
    const skip = (why: CacheNotKept['why']) => notKept.push({ name, path: user, from, why });
    if (within(user, project)) {
      skip('in the project');
      continue;
    }
    if (within(home, user)) {
      skip('covers the home');
      continue;
    }
    if (avoid.some((a) => within(user, a) || within(a, user))) {
      skip('hidden');
      continue;
    }
    // A seeded cache is filled here on the host: it lives apart, bound on its own (never in the
    // caches folder a sandbox can write), as a cache that cannot be a link does.
    const own = c.mode === 'seeded' && within(user, home);
    const priv = own ? aloneOf(root, name) : join(root, name);
    if (!o.dry) {
      let made: boolean;
      try {
        if (own) adopt(join(root, name), priv);
        made = ensureDir(priv, o.owner, absent);
      } catch {
        // A folder that cannot be made (~/.cache a link to a disk not mounted, a file dropped there
        // meanwhile): this cache is not kept this time, and the command still starts.
        continue;
      }
      const late = made ? changeableStep([root, bound], open, o.owner) : null;
      if (late) return refuse(late.why, late.at);
    }
    if (c.mode === 'beside') {
      // Shown only to a tool pointed at it ({user} in a variable): Python's bytecode has no cache of yours to read.
      const pointed = Object.values(c.env ?? {}).some((v) => v.includes('{user}'));
      const shown = pointed && !absent(user) && lstatSync(user, { throwIfNoEntry: false })?.isDirectory() === true;
      binds.push({ name, mode: c.mode, user, private: priv, at: priv, userShown: shown, from });
      for (const [k, v] of Object.entries(c.env ?? {})) vars[k] = fill(v, priv, user);
      continue;
    }
    // Bound at the cache's own path: only where the sandbox can make that path, inside the private home.
    // Not elsewhere (an XDG_CACHE_HOME of /var/tmp/x, /usr or a mount): what the tool writes there
    // stays in the sandbox's own view and is discarded, or is refused where that folder is read-only.
    if (!within(user, home)) {
      skip('outside the home');
      continue;
    }
    let incomplete = false;
    // Filled only from a cache no sandbox can change meanwhile (~/.cargo granted writable, or a link into the project or lying in it).
    if (!o.dry && own && c.seed?.length && !absent(user) && lstatSync(user, { throwIfNoEntry: false })?.isDirectory() && !reachable(user, open) && !firstOnWay([user], (p, _st, link) => (!link && inPlaces(p, open)) || null)) {
      // The stamp lies beside the cache's folder, in no folder a sandbox sees.
      incomplete = !seed(user, priv, c.seed, `${priv}.seeded`, seedEntries);
    }
    binds.push({ name, mode: c.mode, user, private: priv, at: user, userShown: false, from, ...(own ? { own: true as const } : {}), ...(incomplete ? { seedIncomplete: true as const } : {}) });
  }
  const late = fresh ? changeableStep([root, bound], open, o.owner) : null;
  if (late) return refuse(late.why, late.at);
  const alone = (b: CacheBind): string => {
    if (b.own) return b.private;
    const dir = aloneOf(root, b.name);
    if (!o.dry) ensureDir(dir, o.owner, absent);
    return dir;
  };
  return { binds, env: vars, root, alone, ...(notKept.length ? { notKept } : {}) };
}

/** The real path of `p`, also when it does not exist yet: its nearest existing folder's, with the rest. */
function realFrom(p: string): string {
  let rest = '';
  for (let d = p; ; d = dirname(d)) {
    if (lstatSync(d, { throwIfNoEntry: false })) return join(realOrSelf(d), rest);
    if (dirname(d) === d) return p;
    rest = rest ? join(basename(d), rest) : basename(d);
  }
}

/** Whether `x` lies in one of the places a sandbox can write. */
const inPlaces = (x: string, open: readonly string[]) => open.some((w) => within(x, w));

/**
 * Whether a sandbox could change `p` or what leads to it: `p` itself, or any folder above it, lies
 * (by its real path) in one of the `open` places. A link anywhere on the way (~/.cache ─► the
 * project) puts what is below it where that link leads, so each step is looked at; a real path is
 * asked only where needed: for a step that is no link, its own real path lies below its parent's,
 * so the check of the step covered the parent too.
 */
function reachable(p: string, open: readonly string[]): boolean {
  const inOpen = (x: string) => inPlaces(x, open);
  if (inOpen(p)) return true;
  let ask = true;
  for (let d = p; ; d = dirname(d)) {
    const st = lstatSync(d, { throwIfNoEntry: false });
    if (st && ask && inOpen(realOrSelf(d))) return true;
    ask = !st || st.isSymbolicLink();
    if (dirname(d) === d) return false;
  }
}

type Changer = Extract<CachesRefused['why'], 'a sandbox can change it' | 'another user can change it'>;

/**
 * The first step on the way to each of `paths` that someone else may change, and who: a folder
 * looked in that lies in one of the `open` places (a sandbox), or that someone other than this
 * user, the sandbox's `owner` and root may change entries of: one they own, or one others may
 * write in without the sticky bit (group-writable counts unless the group is this process's own, as
 * a user-private group is), or a link of theirs (in a sticky folder its owner may replace it; the
 * kernel follows it unless fs.protected_symlinks). Null where there is none.
 */
function changeableStep(paths: readonly string[], open: readonly string[], owner?: number): { at: string; why: Changer } | null {
  const uid = process.getuid?.() ?? -1;
  const gid = process.getgid?.() ?? -1;
  const ours = (u: number) => u === 0 || u === uid || u === owner;
  return firstOnWay<Changer>(paths, (p, st, link) => {
    if (!link && inPlaces(p, open)) return 'a sandbox can change it';
    if (!st) return null;
    const others = st.mode & 0o002 || (st.mode & 0o020 && st.gid !== gid);
    return !ours(st.uid) || (!link && others && !(st.mode & 0o1000)) ? 'another user can change it' : null;
  });
}

/**
 * The first step `bad` has a word for on the way to each of `paths`, followed as the kernel does:
 * each real folder looked in (and the last one reached), and each link by its own stats. A link is
 * an entry of the folder it lies in, and where it leads is followed on from there, so each folder a
 * link's target passes through counts (a link in a folder someone else may change can be pointed
 * anywhere between our checks and bwrap's bind). Null where there is none; what does not exist yet
 * is made by us, and the caller looks again once it is.
 */
function firstOnWay<W>(paths: readonly string[], bad: (p: string, st: Stats | undefined, link: boolean) => W | null): { at: string; why: W } | null {
  const judged = new Map<string, W | null>();
  // `d` is a real path here (every link before it followed): its own mode decides.
  const folder = (d: string, known?: Stats): W | null => {
    let v = judged.get(d);
    if (v === undefined) judged.set(d, (v = bad(d, known ?? lstatSync(d, { throwIfNoEntry: false }), false)));
    return v;
  };
  for (const p of paths) {
    let names = p.split('/').filter(Boolean);
    let d = '/';
    // As the kernel's own limit: a loop of links leads nowhere, and nothing is made through it.
    let links = 40;
    for (;;) {
      const here = folder(d);
      if (here !== null) return { at: d, why: here };
      const name = names.shift();
      if (name === undefined) break;
      if (name === '.') continue;
      if (name === '..') {
        d = dirname(d);
        continue;
      }
      const next = join(d, name);
      const seen = judged.has(next);
      const st = seen ? null : lstatSync(next, { throwIfNoEntry: false });
      if (st === undefined) break;
      if (seen || !st?.isSymbolicLink()) {
        if (st) folder(next, st);
        d = next;
        continue;
      }
      const link = bad(next, st, true);
      if (link !== null) return { at: next, why: link };
      if (--links < 0) break;
      let to: string;
      try {
        to = readlinkSync(next);
      } catch {
        break;
      }
      names = [...to.split('/').filter(Boolean), ...names];
      if (isAbsolute(to)) d = '/';
    }
  }
  return null;
}

/**
 * A seeded cache kept in the caches folder before (up to this release) moves to its own folder once,
 * rather than being copied again: rename moves whatever is at that name (a link a command left is
 * moved as the link, and then removed by ensureDir).
 */
function adopt(was: string, to: string): void {
  if (lstatSync(to, { throwIfNoEntry: false }) || !lstatSync(was, { throwIfNoEntry: false })?.isDirectory()) return;
  try {
    mkdirSync(dirname(to), { recursive: true, mode: 0o700 });
    renameSync(was, to);
  } catch {
    /* made or moved by a parallel start: the next check sees it */
  }
}

/**
 * Where a cache that cannot be a link keeps its files: beside the caches folder, in a folder no
 * start ever shows whole (each cache in it is bound on its own, a mount point no command can
 * replace), so that nothing a command writes in the caches folder decides what a later start binds.
 */
export const aloneOf = (root: string, name: string): string => join(`${root}.bound`, name);

/**
 * The bwrap arguments of a cache plan: the caches folder read-write at its own path, once, where
 * a cache uses it (one mount, where one per cache cost bwrap about 1.5 ms per start); a beside
 * cache's user folder read-only, its private folder shown with the caches folder; a seeded cache
 * bound on its own from its folder beside; each private cache a link at the tool's path into its
 * folder where `linkable` says a link can be made there (in the private home), else its alone
 * folder (plan.alone, made now) bound there on its own (inside a folder shown read-only, whose
 * mount point must already exist); the variables.
 *
 * A command can write in the caches folder: it can put a link where a cache's folder was
 * (`cargo-git` ─► `../../../../.ssh`). That link is only ever followed inside a sandbox, which
 * shows nothing of the home's own behind it; bwrap resolves a bind's source on the host, so no
 * bind's source lies in the caches folder, and ensureDir makes the folder again at the next start.
 */
export function cacheArgs(plan: CachePlan, linkable: (at: string) => boolean = () => false): { args: string[]; bound: string[] } {
  const args: string[] = [];
  const bound: string[] = [];
  const bind = (mode: '--bind' | '--ro-bind', from: string, at: string) => (args.push(mode, from, at), bound.push(at));
  const root = plan.root;
  const inRoot = (b: CacheBind) => !b.own && (b.at === b.private || linkable(b.at));
  if (root && plan.binds.some(inRoot)) bind('--bind', root, root);
  for (const b of plan.binds) {
    if (b.userShown) bind('--ro-bind', b.user, b.user);
    if (b.at === b.private) continue;
    if (b.own) bind('--bind', b.private, b.at);
    else if (linkable(b.at)) args.push('--symlink', b.private, b.at);
    else if (plan.alone) bind('--bind', plan.alone(b), b.at);
  }
  for (const [k, v] of Object.entries(plan.env)) args.push('--setenv', k, v);
  return { args, bound };
}
