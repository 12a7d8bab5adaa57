/*
 * The cost of the sandbox per process start: the same approved command
 * (`true`, in a project) started bare and started the way the spawn point
 * starts it sandboxed (confinedCommand: the placeholders for the project's
 * missing protected paths, the bwrap command line; then bwrap with its syscall
 * filter on a descriptor of its own, forked in root's pids cgroup as the spawn point does), each timed
 * from the start of that work to the process's exit; the placeholders given
 * back after the exit are timed apart as teardown (with the shipped
 * placeholder_linger_ms they stay for the next start: made by the first, removed
 * once at the end) (bundled and run by bench/spawn.mjs; not a test, no assertions).
 *
 *   round r: [bare, floor, sandboxed] (order alternates by round) × calls ─► medians per round
 *   floor: bwrap with every namespace and only /usr, /proc and /dev, started as the bare one is:
 *   what any bwrap sandbox costs on this machine, before a mount or a check of ours
 *   through the spawn point: the same `true` as an approved command runs it (supervise: the spawn
 *   row, then bwrap supervised by this process, or without a sandbox the node supervisor), bare
 *   against sandboxed, each from the
 *   call to its result (the status, what it created among protected paths, what it left in its
 *   private home and /tmp): what a user waits for per command; bare and sandboxed in turn start
 *   by start, the added time the median of the pairs' differences
 *   own: confinedCommand alone, no process, averaged over many ─► µs
 *   own in a populated project (the scan for protected paths), and the scan after the exit ─► µs
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inCgroup } from '../src/engine/spawn/bounds.js';
import { sealed } from '../src/engine/spawn/fds.js';
import { confinedCommand, NO_GRANTS, sandboxSupport, supervise } from '../src/engine/spawn/index.js';
import { enforce, type GateEnv } from '../src/policy/gate.js';
import { shippedPolicy } from '../src/policy/load.js';
import { openDb } from '../src/store/db.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** One start to exit; `start` spawns it (bare, or the sandbox the way the spawn point starts it). */
function once(start: () => ChildProcess): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const c = start();
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`exited ${code}`))));
  });
}

/** A project of 120 folders three levels deep with 6 files each, a submodule and a nested host config. */
function populate(dir: string): void {
  for (let a = 0; a < 5; a++) {
    for (let b = 0; b < 4; b++) {
      for (let c = 0; c < 6; c++) {
        const d = join(dir, `pkg${a}`, `mod${b}`, `part${c}`);
        mkdirSync(d, { recursive: true });
        for (let f = 0; f < 6; f++) writeFileSync(join(d, `file${f}.ts`), '');
      }
    }
  }
  mkdirSync(join(dir, '.git', 'modules', 'lib'), { recursive: true });
  writeFileSync(join(dir, '.git', 'config'), '[core]\n\tbare = false\n');
  writeFileSync(join(dir, '.git', 'modules', 'lib', 'config'), '[core]\n\tbare = false\n');
  mkdirSync(join(dir, 'pkg0', 'lib'), { recursive: true });
  writeFileSync(join(dir, 'pkg0', 'lib', '.git'), 'gitdir: ../../.git/modules/lib\n');
  mkdirSync(join(dir, 'pkg1', '.vscode'), { recursive: true });
}

export async function run(o: { rounds?: number; calls?: number } = {}) {
  const rounds = o.rounds ?? 5;
  const calls = o.calls ?? 20;
  const support = sandboxSupport();
  if (support.level !== 'bwrap') throw new Error(`no sandbox here: ${support.detail}`);
  const root = mkdtempSync(join(tmpdir(), 'sc-spawn-bench-'));
  const project = join(root, 'project');
  mkdirSync(project);
  const policy = shippedPolicy();
  const env = { PATH: process.env.PATH ?? '', HOME: root };
  const profile = join(root, 'profile');
  mkdirSync(profile, { mode: 0o700 });
  const bare = ['true'];
  // As a command starts: with the report of what it leaves in its private home and /tmp (read, then removed, after it).
  const boxed = () => confinedCommand({ argv: bare, cwd: project, env, confine: { project, network: false }, trustedArgv: false, policy }, support.bwrap as string, profile, undefined, { grants: NO_GRANTS, report: true });
  // The least a bwrap sandbox is: every namespace, the system's programs, /proc and /dev, nothing of ours.
  const floor = [support.bwrap as string, '--unshare-all', '--die-with-parent', '--new-session', '--as-pid-1', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--proc', '/proc', '--dev', '/dev', 'true'];
  const out = { bare: [] as number[], floor: [] as number[], sandboxed: [] as number[], teardown: [] as number[], supervised_bare: [] as number[], supervised_sandboxed: [] as number[], supervised_added: [] as number[], own_us: 0, own_tree_us: 0, after_tree_us: 0, rounds, calls_per_round: calls };
  try {
    for (let r = 0; r < rounds; r++) {
      const order: Array<'bare' | 'floor' | 'sandboxed'> = r % 2 ? ['sandboxed', 'floor', 'bare'] : ['bare', 'floor', 'sandboxed'];
      for (const which of order) {
        const times: number[] = [];
        const teardown: number[] = [];
        for (let i = 0; i < calls; i++) {
          if (which === 'bare') times.push(await once(() => spawn(bare[0] as string, bare.slice(1), { cwd: project, stdio: 'ignore', env, detached: true })));
          else if (which === 'floor') times.push(await once(() => spawn(floor[0] as string, floor.slice(1), { cwd: project, stdio: 'ignore', env, detached: true })));
          else {
            // The command line is built per start, as the spawn point does: its cost is part of the overhead.
            const t0 = performance.now();
            const c = boxed();
            await once(() => {
              // As the spawn point starts it: inherited descriptors closed by bwrap, the filter on a descriptor of its own, root's cgroup joined for the fork.
              const s = sealed(c.argv, 'ignore', c.bwrapAt, undefined, c.filter);
              const child = inCgroup(c.cgroup, () => spawn(s.argv[0] as string, s.argv.slice(1), { cwd: project, stdio: s.stdio, env: c.env, detached: true }));
              s.feed(child);
              return child;
            });
            times.push(performance.now() - t0);
            // Giving the placeholders back happens after the exit: timed apart, as teardown.
            const t1 = performance.now();
            c.release();
            c.discarded();
            teardown.push(performance.now() - t1);
          }
        }
        out[which].push(median(times));
        if (which === 'sandboxed') out.teardown.push(median(teardown));
      }
    }
    // The same command as the spawn point starts an approved one: its spawn row, and the sandbox (bwrap, supervised
    // by this process) or none (a PATH with no bwrap on it, what a machine without the sandbox does: the node supervisor).
    const db = openDb(profile, 5000);
    try {
      const gate: GateEnv = { policy, db: () => db, project: () => ({ path: project, trusted: true, level: 'workspace', network: false }) };
      await enforce(gate, { action: 'job:run', principal: { kind: 'engine', owner: 'bench', allow_write: true, allow_approvals: false }, requested_level: 'workspace' }, async (ticket) => {
        const hostPath = process.env.PATH;
        const start = async (sandboxed: boolean) => {
          process.env.PATH = sandboxed ? hostPath : join(root, 'no-bwrap-here');
          const t0 = performance.now();
          try {
            const s = supervise(ticket, { kind: 'command', argv: bare, cwd: project, env, confine: { project, network: false }, trustedArgv: false, policy, db, graceMs: 1000, stdin: 'ignore' });
            if (s.level !== (sandboxed ? 'bwrap' : 'none')) throw new Error(`started ${s.level}`);
            // As a command's result waits for them: the status, the protected paths it created, what it left behind.
            const [st] = await Promise.all([s.status, s.created, s.discarded]);
            if (st.code !== 0) throw new Error(`exited ${st.code}: ${st.error}`);
            return performance.now() - t0;
          } finally {
            process.env.PATH = hostPath;
          }
        };
        // The bare one's node start-up drifts with the machine: bare and sandboxed in turn,
        // start by start, and the added time taken pair by pair.
        for (let r = 0; r < rounds; r++) {
          const bareT: number[] = [];
          const boxT: number[] = [];
          const added: number[] = [];
          for (let i = 0; i < calls; i++) {
            const first = (r + i) % 2 === 0;
            const a = await start(!first);
            const b = await start(first);
            const [box, plain] = first ? [b, a] : [a, b];
            bareT.push(plain);
            boxT.push(box);
            added.push(box - plain);
          }
          out.supervised_bare.push(median(bareT));
          out.supervised_sandboxed.push(median(boxT));
          out.supervised_added.push(median(added));
        }
      });
    } finally {
      db.close();
    }
    // The spawn point's own share of a start: everything but bwrap and the process, without the teardown.
    const n = 200;
    let own = 0;
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const c = boxed();
      own += performance.now() - t0;
      c.release();
      c.discarded();
    }
    out.own_us = (own / n) * 1000;
    // The same in a project the size of a small real one (about 800 entries in 120 folders, a
    // submodule, a nested host config): the scan for protected paths below the top is most of it.
    const tree = join(root, 'tree');
    populate(tree);
    const boxedTree = () => confinedCommand({ argv: bare, cwd: tree, env, confine: { project: tree, network: false }, trustedArgv: false, policy }, support.bwrap as string, profile);
    let ownTree = 0;
    let after = 0;
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const c = boxedTree();
      ownTree += performance.now() - t0;
      c.release();
      const t1 = performance.now();
      c.created();
      after += performance.now() - t1;
    }
    out.own_tree_us = (ownTree / n) * 1000;
    out.after_tree_us = (after / n) * 1000;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return out;
}
