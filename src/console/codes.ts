/*
 * The running console's record in the profile, and its one-time codes.
 *
 *   console starts ─► console.json (0600): {pid, url}; console-codes/ (0700) emptied
 *   console starts, or shadowcode console --code ─► console-codes/<sha256 of the code>
 *       holding its expiry ─► the URL printed with the code
 *   first visit with ?code= ─► that file read, then unlinked (spent) ─► a cookie
 *
 * Only digests are stored: no file holds a usable code. One file a code, so minting
 * never rewrites what another process may be spending: a shared list, read and written
 * back by two processes at once, could bring a spent code back to life or lose a new
 * one. Unlinking succeeds once, so a code is spent once. Every file is written through
 * a temporary file and a rename, so a reader never sees half of one.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ScError } from '../errors.js';
import { sha256 } from '../util/canonical-json.js';
import { makeDirs } from '../util/make-dirs.js';

export interface ConsoleRecord {
  readonly pid: number;
  readonly url: string;
}

const fileOf = (profileDir: string) => join(profileDir, 'console.json');
const codesOf = (profileDir: string) => join(profileDir, 'console-codes');

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

function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, file);
}

/** Drops the codes that have expired; a file that cannot be read is left to the next start. */
function sweep(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (!/^[0-9a-f]{64}$/.test(name)) continue;
    try {
      if (Number(readFileSync(join(dir, name), 'utf8')) <= Date.now()) unlinkSync(join(dir, name));
    } catch {
      /* spent or swept meanwhile */
    }
  }
}

/** A new code for the console whose codes live in `dir`; only its digest is kept. */
function mint(dir: string, url: string, ttlMs: number): { code: string; url: string } {
  const code = randomBytes(24).toString('base64url');
  sweep(dir);
  writeAtomic(join(dir, sha256(code)), `${Date.now() + ttlMs}\n`);
  return { code, url: `${url}?code=${code}` };
}

/** Written by the console when it starts listening: its record and its first code. Codes of an earlier console are dropped. */
export function startRecord(profileDir: string, url: string, ttlMs: number): { code: string; url: string } {
  const dir = codesOf(profileDir);
  rmSync(dir, { recursive: true, force: true });
  makeDirs(dir, 0o700);
  writeAtomic(fileOf(profileDir), `${JSON.stringify({ pid: process.pid, url } satisfies ConsoleRecord)}\n`);
  return mint(dir, url, ttlMs);
}

/** `shadowcode console --code`: a code for a second browser, against the console already running. */
export function mintCode(profileDir: string, ttlMs: number): { code: string; url: string } {
  const notRunning = () => new ScError('SC_CONSOLE_NOT_RUNNING', 'no console is running for this profile; start one with shadowcode console');
  const rec = readRecord(profileDir);
  if (!rec) throw notRunning();
  try {
    return mint(codesOf(profileDir), rec.url, ttlMs);
  } catch (err) {
    // The console stopped (and took its codes folder) between the record's read and the write.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw notRunning();
    throw err;
  }
}

/** True once per code: an unknown, expired or already spent code is false. */
export function spendCode(profileDir: string, code: string): boolean {
  const rec = readRecord(profileDir);
  if (!rec || rec.pid !== process.pid) return false;
  // A hex digest names the file, whatever the visitor sent.
  const file = join(codesOf(profileDir), sha256(code));
  let expires: number;
  try {
    expires = Number(readFileSync(file, 'utf8'));
    unlinkSync(file);
  } catch {
    return false; // unknown, or spent already
  }
  return expires > Date.now();
}

/** On the way out: the record first (no more codes are minted against it), then the codes. Never throws. */
export function removeRecord(profileDir: string): void {
  const rec = readRecord(profileDir);
  if (rec?.pid !== process.pid) return;
  try {
    rmSync(fileOf(profileDir), { force: true });
    // A `console --code` that read the record just before may still add a file meanwhile (ENOTEMPTY): try again.
    rmSync(codesOf(profileDir), { recursive: true, force: true, maxRetries: 3 });
  } catch {
    // What is left is dropped by the next console's start; a stale code is useless without this console.
  }
}
