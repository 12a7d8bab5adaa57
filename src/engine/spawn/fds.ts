/*
 * Only fds 0-2 reach a started process. Node opens everything of its own
 * close-on-exec; what is not is what this process was handed itself: a
 * descriptor the shell that started shadowcode left open (`exec 200>>file`),
 * a parent's IPC channel, the supervisor's lifeline on fd 3. We cannot clear
 * the flag (Node has no fcntl) or close them here (someone may use them), so
 * the child gets them replaced, and bwrap closes them:
 *
 *   inheritableFds(): each /proc/self/fdinfo/N above 2 whose flags lack O_CLOEXEC
 *   sealed(argv, stdio, at) ─► stdio: N ─► /dev/null (read-only) in the child, so
 *     nothing of the original reaches it
 *     argv[at] is bwrap ─► `--args N` for each N: bwrap reads its (empty) extra
 *     arguments from N and closes it before anything runs inside ─► fds 0-2 only
 *     no bwrap (unsandboxed) ─► N stays open on /dev/null: writes fail, reads end
 *   with a syscall filter (seccomp.ts) and bwrap: one more descriptor above all of those
 *     ─► `--seccomp M`: the program in a file with no name (written once per program, kept
 *     open read-only), opened again for each start so that each reads it from its start;
 *     bwrap reads it to its end, loads it for the command and closes M: still fds 0-2 only.
 *     Ready when bwrap starts: nothing waits for this process's event loop. feed() closes
 *     this process's copy. Where no such file can be made, a pipe that feed() fills.
 *   with a gate (bwrap, a start its starter supervises itself: own-group.ts) ─► a socket at the
 *     lowest free descriptor from 3 to 9, put in the command line where GATE_FD stands, and
 *     `--info-fd N` above everything (bwrap closes it in the sandbox); none free ─► no gate
 */
import { closeSync, constants, openSync, readdirSync, readSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { ChildProcess, StdioOptions } from 'node:child_process';
import type { Writable } from 'node:stream';

/** Stands for the gate's descriptor in a command line (sandbox.ts GATE) until sealed() puts it in: no argument can hold a NUL. */
export const GATE_FD = '\u0000gate-fd';

const O_CLOEXEC = 0o2000000;
/** The start of an fdinfo file: `pos:` and `flags:` are its first two lines, well inside this. */
const info = Buffer.alloc(256);

/** The first bytes of /proc/self/fdinfo/NAME (one open, one read, one close: readFileSync's stat and buffers were most of a start's descriptor check); null when it is gone. */
function fdinfoHead(name: string): string | null {
  let fd: number;
  try {
    fd = openSync(`/proc/self/fdinfo/${name}`, 'r');
  } catch {
    return null;
  }
  try {
    return info.toString('latin1', 0, readSync(fd, info, 0, info.length, 0));
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * The descriptors above stderr a child would inherit (Linux; none elsewhere, where there is no sandbox either).
 * Each one's flags are read: covering every open descriptor from one listing instead was measured
 * (20 in a bench process) and bwrap's read and close of each extra one cost as much as it saved here.
 */
export function inheritableFds(): number[] {
  if (process.platform !== 'linux') return [];
  let names: string[];
  try {
    names = readdirSync('/proc/self/fdinfo');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const name of names) {
    const fd = Number(name);
    if (!Number.isInteger(fd) || fd <= 2) continue;
    // Written by the kernel; the listing's own descriptor is gone by now (and was close-on-exec).
    const head = fdinfoHead(name);
    if (head === null) continue;
    const flags = /^flags:\s*([0-7]+)/m.exec(head)?.[1];
    if (flags !== undefined && (Number.parseInt(flags, 8) & O_CLOEXEC) === 0) out.push(fd);
  }
  return out.sort((a, b) => a - b);
}

let devNull: number | null = null;

/** open(2)'s O_TMPFILE on Linux (x86-64, arm64): a file in that folder's file system that no folder lists. */
const O_TMPFILE = 0o20200000;
/** Each filter program (by its bytes), on a read-only descriptor of a nameless file; null where none could be made. */
const programs = new Map<string, number | null>();

/**
 * The program on a descriptor of a file no other process can open by any name (O_TMPFILE: it is
 * never linked into a folder) and that this process never writes again: written once through a
 * descriptor that is closed right after, kept open read-only. Opening /proc/self/fd/N gives each
 * start a descriptor of its own, at the start of the file. Null where the file system has no
 * O_TMPFILE: the caller falls back to a pipe.
 */
function programFd(filter: Buffer): number | null {
  const key = filter.toString('latin1');
  let fd = programs.get(key);
  if (fd !== undefined) return fd === null ? null : openSync(`/proc/self/fd/${fd}`, 'r');
  fd = null;
  try {
    const w = openSync(tmpdir(), O_TMPFILE | constants.O_RDWR, 0o400);
    try {
      for (let off = 0; off < filter.length; ) off += writeSync(w, filter, off);
      fd = openSync(`/proc/self/fd/${w}`, 'r');
    } finally {
      closeSync(w);
    }
  } catch {
    fd = null;
  }
  programs.set(key, fd);
  return fd === null ? null : openSync(`/proc/self/fd/${fd}`, 'r');
}

/**
 * argv and stdio for a spawn that passes on nothing but its own stdio: every
 * inherited descriptor is /dev/null in the child, and where argv[at] is bwrap,
 * bwrap closes each before the sandbox starts. `at` is null without a sandbox.
 * With a syscall filter (and bwrap), the child gets it on a descriptor of its own:
 * call feed(child) once it is spawned (it closes this process's copy, or fills the pipe).
 */
export function sealed(argv: readonly string[], stdio: StdioOptions, at: number | null, fds: readonly number[] = inheritableFds(), filter: Buffer | null = null, gate = false): { argv: string[]; stdio: StdioOptions; feed: (child?: ChildProcess) => void; gate?: { readonly socket: number; readonly info: number } } {
  const out: Array<Exclude<StdioOptions, string>[number]> = typeof stdio === 'string' ? [stdio, stdio, stdio] : [...stdio];
  // Above 2, 'ignore' leaves the inherited descriptor in place: only what the caller passes on purpose is kept.
  const taken = fds.filter((fd) => out[fd] === undefined || out[fd] === null || out[fd] === 'ignore');
  const withFilter = at !== null && filter !== null;
  const withGate = at !== null && gate;
  if (taken.length === 0 && !withFilter && !withGate) return { argv: [...argv], stdio, feed: () => {} };
  if (taken.length) {
    devNull ??= openSync('/dev/null', 'r');
    while (out.length <= (taken[taken.length - 1] as number)) out.push('ignore');
    for (const fd of taken) out[fd] = devNull;
  }
  if (at === null) return { argv: [...argv], stdio: out, feed: () => {} };
  const extra = taken.flatMap((fd) => ['--args', String(fd)]);
  let feed = (_child?: ChildProcess) => {};
  if (withFilter) {
    while (out.length < 3) out.push('ignore');
    const n = out.length;
    const ready = programFd(filter);
    out.push(ready ?? 'pipe');
    extra.push('--seccomp', String(n));
    if (ready !== null) {
      let open = true;
      feed = () => {
        if (open) closeSync(ready);
        open = false;
      };
    } else {
      feed = (child) => {
        const pipe = child?.stdio[n] as Writable | null | undefined;
        if (!pipe) return;
        // bwrap that failed before reading it closes the other end: nothing to report here, its own exit says why.
        pipe.on('error', () => {});
        pipe.end(filter);
      };
    }
  }
  // The gate (sandbox.ts GATE): a socket the sandbox's first process holds until it is told go, below
  // 10 (the shell names it in a redirection, and dash takes one digit there), and bwrap's report that
  // it has tied itself to this process (--info-fd, which it closes in the sandbox). No free descriptor
  // below 10 (seven inherited ones): no gate, and the caller starts it another way.
  let held: { socket: number; info: number } | undefined;
  const free = withGate ? [3, 4, 5, 6, 7, 8, 9].find((fd) => out[fd] === undefined || out[fd] === 'ignore') : undefined;
  if (free !== undefined) {
    while (out.length <= free) out.push('ignore');
    out[free] = 'pipe';
    held = { socket: free, info: out.length };
    out.push('pipe');
    extra.push('--info-fd', String(held.info));
  }
  const line = [...argv.slice(0, at + 1), ...extra, ...argv.slice(at + 1)].map((a) => (held && a === GATE_FD ? String(held.socket) : a));
  return { argv: line, stdio: out, feed, ...(held ? { gate: held } : {}) };
}
