/*
 * The cost of the sandbox per process start: the same approved command
 * (`true`, in a project) started bare and started through the bwrap command
 * line the spawn point builds from the shipped policy, each timed from spawn to
 * exit (bundled and run by bench/spawn.mjs; not a test, no assertions).
 *
 *   round r: [bare, sandboxed] (order alternates by round) × calls ─► medians per round
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sandboxSupport } from '../src/engine/spawn/index.js';
import { sandboxArgv } from '../src/engine/spawn/sandbox.js';
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
  const bare = ['true'];
  const boxed = () => sandboxArgv({ project, network: false, profileDir: join(root, 'profile'), argv: bare, cwd: project, env, policy: policy.sandbox, bwrap: support.bwrap as string, trusted: false, unset: policy.environment.deny });
  const out = { bare: [] as number[], sandboxed: [] as number[], rounds, calls_per_round: calls };
  try {
    for (let r = 0; r < rounds; r++) {
      const order: Array<'bare' | 'sandboxed'> = r % 2 ? ['sandboxed', 'bare'] : ['bare', 'sandboxed'];
      for (const which of order) {
        const times: number[] = [];
        // The command line is built per start, as the spawn point does: its cost is part of the overhead.
        for (let i = 0; i < calls; i++) times.push(await once(which === 'bare' ? bare : boxed(), project));
        out[which].push(median(times));
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return out;
}
