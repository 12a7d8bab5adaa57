/*
 * Export counters kept in the profile, so that `status` (another process) and
 * shadow_doctor can say what each exporting process sent, dropped and failed to send.
 *
 *   exporting process ─► every stats_write_ms, when a count changed, and at shutdown
 *        ─► <profile>/telemetry/PID.json (0600; written to a temp name, then renamed)
 *   readCounts(profile) ─► every file, newest first; files of ended processes older
 *        than stats_keep_ms are removed as they are read
 *
 * Writes are asynchronous and their failures ignored: counting never gets in a call's way.
 */
import { mkdirSync, readdirSync, readFileSync, rename, unlinkSync, writeFile } from 'node:fs';
import { join } from 'node:path';
import type { TelemetryCounts } from './hooks.js';

const dirOf = (profileDir: string) => join(profileDir, 'telemetry');

/** Writes this process's counters; never throws, never waits. */
export function writeCounts(profileDir: string, c: TelemetryCounts, done?: () => void): void {
  const dir = dirOf(profileDir);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch {
    return void done?.();
  }
  const file = join(dir, `${c.pid}.json`);
  const tmp = join(dir, `.${c.pid}.${Date.now()}.tmp`);
  writeFile(tmp, `${JSON.stringify(c)}\n`, { mode: 0o600 }, (err) => {
    if (err) return void done?.();
    rename(tmp, file, () => done?.());
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface KnownCounts extends TelemetryCounts {
  readonly running: boolean;
}

/** The counters of every exporting process of the profile that ran within `keepMs`, newest first. */
export function readCounts(profileDir: string, keepMs: number): KnownCounts[] {
  const dir = dirOf(profileDir);
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => /^\d+\.json$/.test(n));
  } catch {
    return [];
  }
  const out: KnownCounts[] = [];
  for (const n of names) {
    let c: TelemetryCounts;
    try {
      c = JSON.parse(readFileSync(join(dir, n), 'utf8')) as TelemetryCounts;
    } catch {
      continue;
    }
    const running = c.pid !== process.pid && alive(c.pid) ? true : c.pid === process.pid;
    if (!running && Date.now() - Date.parse(c.updated_at) > keepMs) {
      try {
        unlinkSync(join(dir, n));
      } catch {
        // another reader removed it first
      }
      continue;
    }
    out.push({ ...c, running });
  }
  return out.sort((a, b) => b.updated_at.localeCompare(a.updated_at));
}
