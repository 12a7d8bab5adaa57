/*
 * Real diagnostics of the profile and the selected project. It reports; it
 * never repairs. Each check is ok, warn or fail with a one-line detail.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Settings } from '../../gen/types/settings.js';
import { grantStates } from '../catalog/view.js';
import type { Policy } from '../policy/load.js';
import { verifyAudit } from '../store/audit.js';
import type { Db } from '../store/db.js';
import { getProject } from '../store/projects.js';
import type { SecretStore } from '../store/secrets.js';
import { credentialPresent } from './models.js';
import { describeExposure, projectOnPath } from './path-exposure.js';
import { sandboxStatus } from './spawn/index.js';

export interface Check {
  readonly id: string;
  readonly status: 'ok' | 'warn' | 'fail';
  readonly detail: string;
}

function mode(path: string): number | null {
  try {
    return statSync(path).mode & 0o777;
  } catch {
    return null;
  }
}

export interface DoctorInput {
  readonly profileDir: string;
  readonly project: string;
  readonly db: Db;
  readonly policy: Policy;
  readonly settings: () => Settings;
  readonly secrets: SecretStore;
  readonly env: NodeJS.ProcessEnv;
}

export function diagnose(i: DoctorInput): Check[] {
  const checks: Check[] = [];
  const perms: string[] = [];
  const dirMode = mode(i.profileDir);
  if (dirMode !== null && dirMode & 0o077) perms.push(`profile directory is ${dirMode.toString(8)}, expected 700`);
  for (const f of ['state.db', 'secrets.json']) {
    const m = mode(join(i.profileDir, f));
    if (m !== null && m & 0o077) perms.push(`${f} is ${m.toString(8)}, expected 600`);
  }
  checks.push({ id: 'profile_permissions', status: perms.length ? 'fail' : 'ok', detail: perms.join('; ') || 'profile directory and files are private' });

  const integrity = i.db.pragma('quick_check', { simple: true }) as string;
  checks.push({ id: 'database_integrity', status: integrity === 'ok' ? 'ok' : 'fail', detail: integrity === 'ok' ? 'state.db passes quick_check' : `quick_check: ${integrity}` });

  const sb = sandboxStatus(i.policy);
  checks.push({
    id: 'sandbox',
    status: sb.level === 'none' ? (sb.require ? 'fail' : 'warn') : 'ok',
    detail: sb.level === 'none' ? `unsandboxed: ${sb.detail}${sb.require ? '; policy/sandbox.json requires one, so no command, runner or server will start' : ''}` : `sandboxed: ${sb.detail}`,
  });

  const audit = verifyAudit(i.db);
  checks.push({
    id: 'audit_chain',
    status: audit.ok ? 'ok' : 'fail',
    detail: audit.ok ? `${audit.rows} rows verify` : `broken at row ${audit.first_break?.seq} (${audit.first_break?.reason})`,
  });

  checks.push({ id: 'policy', status: 'ok', detail: `policy ${i.policy.hash.slice(0, 12)}… with ${i.policy.permissions.rules.length} rules` });

  const p = getProject(i.db, i.project);
  checks.push({ id: 'trust', status: p.trusted ? 'ok' : 'warn', detail: p.trusted ? `trusted at ${p.level}` : 'not trusted: connections are read-only (run shadowcode trust)' });

  const onPath = projectOnPath(i.project, i.env.PATH);
  checks.push({ id: 'path', status: onPath.length ? 'warn' : 'ok', detail: onPath.length ? describeExposure(i.project, onPath) : 'no PATH entry is inside the project' });

  const catalog = grantStates(i.db, i.project, i.policy);
  const stale = [...catalog.definitions.filter((d) => d.grant.state === 'stale').map((d) => d.id), ...(catalog.stale_grants ?? []).map((g) => String((g as { definition_id: string }).definition_id))];
  const refused = catalog.definitions.filter((d) => d.grant.state === 'refused').map((d) => d.id);
  checks.push({
    id: 'grants',
    status: stale.length || refused.length ? 'warn' : 'ok',
    detail: [stale.length ? `stale: ${stale.join(', ')} (enable the new hash or disable)` : '', refused.length ? `refused project files: ${refused.join(', ')}` : '', `${catalog.enabled} of ${catalog.cap} servers enabled`].filter(Boolean).join('; '),
  });

  let settings: Settings | undefined;
  try {
    settings = i.settings();
    checks.push({ id: 'settings', status: 'ok', detail: `${settings.models?.length ?? 0} models configured` });
  } catch (err) {
    checks.push({ id: 'settings', status: 'fail', detail: (err as Error).message });
  }
  if (settings) {
    const missing = (settings.models ?? []).flatMap((m) =>
      m.api_key_env && !credentialPresent(m.api_key_env, i.env, i.secrets) ? [m.api_key_env] : m.api_key_secret && !i.secrets.has(m.api_key_secret) ? [m.api_key_secret] : [],
    );
    checks.push({ id: 'secrets', status: missing.length ? 'warn' : 'ok', detail: missing.length ? `missing: ${[...new Set(missing)].join(', ')}` : 'every referenced credential is present' });
  }
  return checks;
}
