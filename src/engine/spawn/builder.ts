/*
 * The sandbox builder: one interface for the platform's confinement mechanism, so the spawn
 * point, `sandbox show` and the failure explanations never speak bubblewrap directly. Linux has
 * the bubblewrap builder (sandbox.ts builds its command line); another platform's mechanism
 * (macOS Seatbelt: `sandbox-exec -p PROFILE -- argv`, a profile written from the same plan)
 * slots in as another builder. Until one does, a platform without a builder runs unsandboxed,
 * and says so (or refuses, under policy/sandbox.json `require`).
 *
 *   builderFor(platform) ─► probe(PATH, trial)   can it confine here, and what can it do (trial: a
 *                                                throwaway start, made by the spawn point, index.ts)
 *                         ─► commandLine(plan)   the argv that starts plan.argv confined
 *                         ─► helperLine(plan)    the same for one of shadowcode's own helpers
 *                         ─► mounts(line)        what that argv shows at each path, in order:
 *                                                read back by `sandbox show` and by explain.ts
 */
import type { BwrapFeatures, HelperPlan, Lookup, SandboxLevel, SandboxPlan, SandboxSupport } from './sandbox.js';
import { findOnPath, helperArgv, sandboxArgv } from './sandbox.js';
import { within } from './state-paths.js';

/** What a start shows at one path: read-only, read-write, private (empty, discarded), covered (a hidden path), a link. */
export type MountMode = 'ro' | 'rw' | 'private' | 'covered' | 'link';
export interface Mount {
  readonly at: string;
  readonly mode: MountMode;
}

export interface SandboxBuilder {
  readonly level: Exclude<SandboxLevel, 'none'>;
  /** Whether this builder can confine a process here, with the engine's PATH; what it can do. */
  probe(path: string, trial: Trial): SandboxSupport & { features: BwrapFeatures };
  /** The argv that starts plan.argv confined. */
  commandLine(plan: SandboxPlan & { find?: Lookup }): string[];
  /** The argv that starts one of shadowcode's own helpers in a sandbox of its own. */
  helperLine(plan: HelperPlan): string[];
  /** What a command line of this builder shows, mount by mount, in the order they are made (a later one lies on top). */
  mounts(line: readonly string[]): Mount[];
}

const ALL: BwrapFeatures = { size: true, disableUserns: true };
const BASE = ['--unshare-all', '--die-with-parent', '--cap-drop', 'ALL'];
const NO_USERNS = ['--unshare-user', '--disable-userns'];
const SIZED = ['--size', '1048576', '--tmpfs', '/tmp'];
/** A throwaway start of `program args`, to its end: only the spawn point starts processes. */
export type Trial = (program: string, args: readonly string[]) => { status: number | null; stderr: string; error?: string };

/** bubblewrap, on Linux. */
export const bwrapBuilder: SandboxBuilder = {
  level: 'bwrap',
  probe(path, trial) {
    const ok = (bwrap: string, args: string[]) => trial(bwrap, [...args, '--ro-bind', '/', '/', 'true']);
    const none = (detail: string) => ({ level: 'none' as const, bwrap: null, detail, features: ALL });
    const bwrap = findOnPath('bwrap', path);
    if (!bwrap) return none('bwrap is not on PATH (install the bubblewrap package)');
    // Everything we use, in one throwaway run; one part at a time only where that fails (bubblewrap before 0.8.0, a setuid bwrap).
    if (ok(bwrap, [...BASE, ...NO_USERNS, ...SIZED]).status === 0) return { level: 'bwrap', bwrap, detail: `bubblewrap (${bwrap})`, features: ALL };
    const r = ok(bwrap, BASE);
    if (r.status !== 0) {
      const why = r.stderr.trim().split('\n')[0] || r.error || `exit ${r.status}`;
      return none(`bwrap cannot create namespaces here: ${why.slice(0, 200)}`);
    }
    const features = { size: ok(bwrap, [...BASE, ...SIZED]).status === 0, disableUserns: ok(bwrap, [...BASE, ...NO_USERNS]).status === 0 };
    return { level: 'bwrap', bwrap, detail: `bubblewrap (${bwrap})`, features };
  },
  commandLine: (plan) => sandboxArgv(plan),
  helperLine: (plan) => helperArgv(plan),
  mounts(line) {
    const out: Mount[] = [];
    const start = line.findIndex((a) => a.endsWith('bwrap'));
    const end = line.indexOf('--', start < 0 ? 0 : start);
    for (let i = start + 1; i < (end < 0 ? line.length : end); i++) {
      const a = line[i];
      if (a === '--ro-bind' || a === '--bind' || a === '--ro-bind-try' || a === '--bind-try') {
        const [src, dst] = [line[i + 1] as string, line[i + 2] as string];
        out.push({ at: dst, mode: src === '/dev/null' ? 'covered' : a.startsWith('--bind') ? 'rw' : 'ro' });
        i += 2;
      } else if (a === '--tmpfs') {
        out.push({ at: line[i + 1] as string, mode: 'private' });
        i += 1;
      } else if (a === '--remount-ro') {
        const dst = line[i + 1] as string;
        for (let j = out.length - 1; j >= 0; j--) {
          if (out[j]?.at !== dst) continue;
          if (out[j]?.mode === 'private') out[j] = { at: dst, mode: 'covered' };
          break;
        }
        i += 1;
      } else if (a === '--symlink') {
        out.push({ at: line[i + 2] as string, mode: 'link' });
        i += 2;
      } else if (a === '--setenv') {
        i += 2;
      } else if (['--chdir', '--unsetenv', '--proc', '--dev', '--size', '--perms', '--cap-drop', '--cap-add', '--uid', '--gid', '--hostname', '--args', '--info-fd', '--block-fd', '--sync-fd'].includes(a as string)) {
        i += 1;
      }
    }
    return out;
  },
};

/** The builder of a platform; null where none exists yet (macOS: no Seatbelt builder today). */
export function builderFor(platform: NodeJS.Platform = process.platform): SandboxBuilder | null {
  return platform === 'linux' ? bwrapBuilder : null;
}

/**
 * What the start shows at `path`: the mode of the last mount made at or above it (a later mount
 * covers whatever an earlier one showed below it); null when nothing shows it at all.
 */
export function modeAt(mounts: readonly Mount[], path: string): Mount | null {
  for (let i = mounts.length - 1; i >= 0; i--) {
    const m = mounts[i] as Mount;
    if (within(path, m.at)) return m;
  }
  return null;
}
