/*
 * Trust as operations: the person's record that a project may be changed, at a level, and
 * whether its tasks may reach hosts that are not loopback; and withdrawing it.
 *
 *   trust(ops, {level?, network?})
 *     level unset: workspace, or the current level for a network change alone
 *     network unset: the network permission stays as it is
 *     ─► gate cli:trust (a project that is /, the home or holds it: SC_PROJECT_HOLDS_HOME,
 *        said with which of them it is) ─► stored ─► {project, network_changed, network_kept}
 *   untrust(ops) ─► gate cli:untrust ─► stored as read_only ─► {project}
 */
import { asScError, ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { getProject, type ProjectRecord, removeTrust, setTrust } from '../store/projects.js';
import type { Level } from '../ticket.js';
import { type OpsContext, projectOf } from './context.js';

export type { ProjectRecord };

export interface TrustInput {
  readonly level?: Level;
  /** true: tasks may reach remote models and servers; false: loopback only; unset: as it was. */
  readonly network?: boolean;
}

export interface TrustResult {
  readonly project: ProjectRecord;
  readonly network_changed: boolean;
  /** The network permission was not asked about and the project was trusted already: it is the one from before. */
  readonly network_kept: boolean;
}

export async function trust(ops: OpsContext, input: TrustInput = {}): Promise<TrustResult> {
  const path = projectOf(ops, 'trust');
  const { network } = input;
  const db = ops.db();
  const current = getProject(db, path);
  const level = input.level ?? (network !== undefined && current.trusted ? current.level : 'workspace');
  let rec: ProjectRecord;
  try {
    rec = await enforce(ops.gate, ops.request('cli:trust', { args: network === undefined ? { level } : { level, network } }), (t) => setTrust(t, db, path, level, network));
  } catch (err) {
    const e = asScError(err);
    if (e.code !== 'SC_PROJECT_HOLDS_HOME') throw e;
    const home = ops.homes.find((h) => h === path || h.startsWith(path === '/' ? '/' : `${path}/`));
    const what = path === '/' ? 'the root folder' : home === path ? 'your home folder' : `a folder holding your home folder ${home ?? ''}`.trimEnd();
    throw new ScError('SC_PROJECT_HOLDS_HOME', `${path} is ${what}: a task trusted there could change your shell start-up files, git and SSH configuration and read your keys, so it is not trusted. Trust the project's own folder instead (shadowcode --project DIR trust) [rule project-holds-home]`, { ...e.detail, project: path });
  }
  return { project: rec, network_changed: rec.network !== current.network, network_kept: network === undefined && current.trusted };
}

export async function untrust(ops: OpsContext): Promise<{ project: ProjectRecord }> {
  const path = projectOf(ops, 'untrust');
  const db = ops.db();
  return { project: await enforce(ops.gate, ops.request('cli:untrust'), (t) => removeTrust(t, db, path)) };
}
