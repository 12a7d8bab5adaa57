/*
 * The profile's sandbox grants (sandbox-grants.json): what the user added to the
 * sandbox's defaults, per project and for all projects. In the profile, never in a
 * project (a task can write the project; no sandboxed process sees the profile).
 * Absent means none; present means it must match schemas/sandbox-grants.schema.json.
 *
 *   readSandboxGrants(dir)             ─► absent: none  │ invalid: SC_SANDBOX_GRANTS_INVALID
 *   updateSandboxGrants(ticket, …, fn) ─► state.db write lock (serialises writers across processes)
 *     ─► read + validate ─► fn ─► validate ─► .sandbox-grants.json.PID.RAND.tmp (0600) ─► fsync ─► rename
 *     ─► a 'sandbox_grant' audit row with how it ended, tied to the gate's decision
 *
 * A change that does not validate writes nothing; a killed writer leaves at most
 * a dot-named temp file, never a half-written file.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxGrants } from '../../gen/types/sandbox-grants.js';
import { ScError } from '../errors.js';
import { check } from '../schema/validate.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { deepFreeze } from '../util/freeze.js';
import { appendAudit } from './audit.js';
import { type Db, withWriteLock } from './db.js';

export type { SandboxGrants };
export type GrantScope = SandboxGrants['all_projects'];
export type PathGrant = GrantScope['paths'][number];
export type HostGrant = GrantScope['hosts'][number];

export const GRANTS_FILE = 'sandbox-grants.json';

const NONE: SandboxGrants = deepFreeze({ version: 1, all_projects: { paths: [], hosts: [] }, projects: {} });

export function readSandboxGrants(profileDir: string): SandboxGrants {
  const path = join(profileDir, GRANTS_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return NONE;
    throw new ScError('SC_SANDBOX_GRANTS_INVALID', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ScError('SC_SANDBOX_GRANTS_INVALID', `${path} is not valid JSON: ${(err as Error).message}`);
  }
  return deepFreeze(check<SandboxGrants>('sandbox-grants', data, 'SC_SANDBOX_GRANTS_INVALID', path));
}

/** The grants of one scope: a project's real path, or null for every project. */
export function scopeOf(g: SandboxGrants, project: string | null): GrantScope {
  if (project === null) return g.all_projects;
  return (Object.hasOwn(g.projects, project) ? g.projects[project] : undefined) ?? { paths: [], hosts: [] };
}

export interface GrantChange {
  readonly next: SandboxGrants;
  /** Whether anything changed (allowing what is already allowed changes nothing). */
  readonly changed: boolean;
}

/** Applies `change` and writes the result atomically; records the outcome against the ticket's decision either way. */
export function updateSandboxGrants(ticket: GateTicket, profileDir: string, db: Db, about: Record<string, unknown>, change: (g: SandboxGrants) => GrantChange): SandboxGrants {
  assertTicket(ticket, ['cli:sandbox.allow', 'cli:sandbox.revoke']);
  const base = { decision_id: ticket.decisionId, action: ticket.action.slice(4), ...about };
  try {
    return withWriteLock(db, () => {
      const { next, changed } = change(readSandboxGrants(profileDir));
      const valid = check<SandboxGrants>('sandbox-grants', next, 'SC_SANDBOX_GRANT_INVALID', 'the changed sandbox grants');
      if (changed) writeAtomically(profileDir, valid);
      appendAudit(db, 'sandbox_grant', { ...base, ok: true, changed });
      return deepFreeze(valid);
    });
  } catch (err) {
    // Nothing was written; the refusal is still recorded beside its decision.
    try {
      appendAudit(db, 'sandbox_grant', { ...base, ok: false, changed: false, code: err instanceof ScError ? err.code : 'SC_INTERNAL' });
    } catch {
      /* the store itself failed: the error below says so */
    }
    throw err;
  }
}

function writeAtomically(profileDir: string, g: SandboxGrants): void {
  const path = join(profileDir, GRANTS_FILE);
  const tmp = join(profileDir, `.${GRANTS_FILE}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(g, null, 2)}\n`);
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
}
