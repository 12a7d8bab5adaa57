/*
 * A profile's settings.json: absent means defaults; present means it must match
 * schemas/settings.schema.json. Read lazily, only by what needs it.
 *
 *   updateSettings(ticket, …, change) ─► state.db write lock (serialises writers across processes)
 *     ─► read + validate ─► change ─► validate the result ─► .settings.json.PID.RAND.tmp (0600)
 *     ─► fsync ─► rename over settings.json
 *
 * A change that does not validate writes nothing; a killed writer leaves at
 * most a dot-named temp file, never a half-written settings.json.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Settings } from '../../gen/types/settings.js';
import { ScError, type ErrorCode } from '../errors.js';
import { check } from '../schema/validate.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { deepFreeze } from '../util/freeze.js';
import { type Db, withWriteLock } from './db.js';

export function readSettings(profileDir: string): Settings {
  const path = join(profileDir, 'settings.json');
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return deepFreeze({});
    throw new ScError('SC_SETTINGS_INVALID', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ScError('SC_SETTINGS_INVALID', `${path} is not valid JSON: ${(err as Error).message}`);
  }
  return deepFreeze(check<Settings>('settings', data, 'SC_SETTINGS_INVALID', path));
}

/** Applies `change` to the current settings and writes the result atomically; `invalid` is the code for a result that breaks the schema. */
export function updateSettings(ticket: GateTicket, profileDir: string, db: Db, change: (s: Settings) => Settings, invalid: ErrorCode = 'SC_SETTINGS_INVALID'): Settings {
  assertTicket(ticket, ['cli:model.add', 'cli:model.remove']);
  return writeSettings(profileDir, db, change, invalid);
}

/** The same, for the telemetry settings (shadowcode telemetry set/off). */
export function updateTelemetrySettings(ticket: GateTicket, profileDir: string, db: Db, change: (s: Settings) => Settings): Settings {
  assertTicket(ticket, ['cli:telemetry.set', 'cli:telemetry.off']);
  return writeSettings(profileDir, db, change, 'SC_TELEMETRY_INVALID');
}

function writeSettings(profileDir: string, db: Db, change: (s: Settings) => Settings, invalid: ErrorCode): Settings {
  return withWriteLock(db, () => {
    const next = check<Settings>('settings', change(readSettings(profileDir)), invalid, 'the changed settings');
    const path = join(profileDir, 'settings.json');
    const tmp = join(profileDir, `.settings.json.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      writeSync(fd, `${JSON.stringify(next, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      renameSync(tmp, path);
    } catch (err) {
      unlinkSync(tmp);
      throw err;
    }
    return deepFreeze(next);
  });
}
