/*
 * The running console's record in the profile, and its one-time codes.
 *
 *   console starts ─► console.json (0600): {pid, url, codes: [{digest, expires_at}]}
 *   shadowcode console --code ─► a fresh code's digest appended ─► the URL printed with it
 *   first visit with ?code= ─► its digest found, unexpired ─► removed (spent) ─► a cookie
 *
 * Only digests are stored: the file never holds a usable code. Writes go through a
 * temporary file and a rename, so a reader never sees half a record.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ScError } from '../errors.js';
import { sha256 } from '../util/canonical-json.js';

export interface ConsoleRecord {
  readonly pid: number;
  readonly url: string;
  readonly codes: Array<{ digest: string; expires_at: number }>;
}

const fileOf = (profileDir: string) => join(profileDir, 'console.json');

/** The record of a console that still runs, or undefined. */
export function readRecord(profileDir: string): ConsoleRecord | undefined {
  const file = fileOf(profileDir);
  if (!existsSync(file)) return undefined;
  let rec: ConsoleRecord;
  try {
    rec = JSON.parse(readFileSync(file, 'utf8')) as ConsoleRecord;
  } catch {
    return undefined;
  }
  try {
    process.kill(rec.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return undefined;
  }
  return rec;
}

function write(profileDir: string, rec: ConsoleRecord): void {
  const tmp = `${fileOf(profileDir)}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(rec)}\n`, { mode: 0o600 });
  renameSync(tmp, fileOf(profileDir));
}

const live = (codes: ConsoleRecord['codes']) => codes.filter((c) => c.expires_at > Date.now());

/** A new code for the console described by `rec`; only its digest is kept. */
function mint(profileDir: string, rec: ConsoleRecord, ttlMs: number): { code: string; url: string } {
  const code = randomBytes(24).toString('base64url');
  write(profileDir, { ...rec, codes: [...live(rec.codes), { digest: sha256(code), expires_at: Date.now() + ttlMs }] });
  return { code, url: `${rec.url}?code=${code}` };
}

/** Written by the console when it starts listening: its first code. */
export function startRecord(profileDir: string, url: string, ttlMs: number): { code: string; url: string } {
  return mint(profileDir, { pid: process.pid, url, codes: [] }, ttlMs);
}

/** `shadowcode console --code`: a code for a second browser, against the console already running. */
export function mintCode(profileDir: string, ttlMs: number): { code: string; url: string } {
  const rec = readRecord(profileDir);
  if (!rec) throw new ScError('SC_CONSOLE_NOT_RUNNING', 'no console is running for this profile; start one with shadowcode console');
  return mint(profileDir, rec, ttlMs);
}

/** True once per code: an unknown, expired or already spent code is false. */
export function spendCode(profileDir: string, code: string): boolean {
  const rec = readRecord(profileDir);
  if (!rec || rec.pid !== process.pid) return false;
  const d = sha256(code);
  const codes = live(rec.codes);
  const i = codes.findIndex((c) => c.digest === d);
  if (i < 0) return false;
  codes.splice(i, 1);
  write(profileDir, { ...rec, codes });
  return true;
}

export function removeRecord(profileDir: string): void {
  const rec = readRecord(profileDir);
  if (rec?.pid === process.pid) rmSync(fileOf(profileDir), { force: true });
}
