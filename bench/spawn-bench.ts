/*
 * The cost of the sandbox per process start: the same approved command
 * (`true`, in a project) started bare and started the way the spawn point
 * starts it sandboxed (confinedCommand: the placeholders for the project's
 * missing protected paths, the bwrap command line; then bwrap), each timed
 * from the start of that work to the process's exit; the placeholders given
 * back after the exit are timed apart as teardown (bundled and run by
 * bench/spawn.mjs; not a test, no assertions).
 *
 *   round r: [bare, sandboxed] (order alternates by round) × calls ─► medians per round
 *   own: confinedCommand alone, no process, averaged over many ─► µs
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { confinedCommand, sandboxSupport } from '../src/engine/spawn/index.js';
import { shippedPolicy } from '../src/policy/load.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

function once(argv: readonly string[], cwd: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const c = spawn(argv[0] as string, argv.slice(1), { cwd, stdio: 'ignore', env: { PATH: process.env.PATH ?? '', HOME: cwd } });
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${argv[0]} exited ${code}`))));
  });
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
  const boxed = () => confinedCommand({ argv: bare, cwd: project, env, confine: { project, network: false }, trustedArgv: false, policy }, support.bwrap as string, profile);
  const out = { bare: [] as number[], sandboxed: [] as number[], teardown: [] as number[], own_us: 0, rounds, calls_per_round: calls };
  try {
    for (let r = 0; r < rounds; r++) {
      const order: Array<'bare' | 'sandboxed'> = r % 2 ? ['sandboxed', 'bare'] : ['bare', 'sandboxed'];
      for (const which of order) {
        const times: number[] = [];
        const teardown: number[] = [];
        for (let i = 0; i < calls; i++) {
          if (which === 'bare') times.push(await once(bare, project));
          else {
            // The command line is built per start, as the spawn point does: its cost is part of the overhead.
            const t0 = performance.now();
            const c = boxed();
            await once(c.argv, project);
            times.push(performance.now() - t0);
            // Giving the placeholders back happens after the exit: timed apart, as teardown.
            const t1 = performance.now();
            c.release();
            teardown.push(performance.now() - t1);
          }
        }
        out[which].push(median(times));
        if (which === 'sandboxed') out.teardown.push(median(teardown));
      }
    }
    // The spawn point's own share of a start: everything but bwrap and the process, without the teardown.
    const n = 200;
    let own = 0;
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const c = boxed();
      own += performance.now() - t0;
      c.release();
    }
    out.own_us = (own / n) * 1000;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return out;
}
