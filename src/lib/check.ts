/*
 * open()'s options checked before anything is opened: absolute paths, a real project,
 * a policy directory validated like ours, then frozen. An unknown option is an error,
 * so a misspelt one never silently means the default.
 */
import { isAbsolute } from 'node:path';
import { ScError } from '../errors.js';
import { canonicalWorkspace } from '../ops/context.js';
import { loadPolicy, type Policy, shippedPolicy } from '../policy/load.js';
import type { ApprovalHandler, OpenOptions } from './options.js';

export interface Checked {
  readonly profile: string;
  readonly workspace: string;
  readonly policy: Policy;
  readonly env: NodeJS.ProcessEnv;
  readonly owner: string;
  readonly onApproval: ApprovalHandler | undefined;
  readonly log: (line: string) => void;
}

const NAME = /^[A-Za-z0-9_-]{1,48}$/;

function absolute(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') throw new ScError('SC_BAD_VALUE', `${what} must be a non-empty string`);
  if (!isAbsolute(value)) throw new ScError('SC_BAD_VALUE', `${what} must be an absolute path, got ${JSON.stringify(value)}`);
  return value;
}

export function checkOpenOptions(o: OpenOptions): Checked {
  if (o === null || typeof o !== 'object') throw new ScError('SC_BAD_VALUE', 'open() needs an options object: { profile, project }');
  const known = new Set(['profile', 'project', 'workspace', 'policyDir', 'env', 'name', 'onApproval', 'log']);
  for (const k of Object.keys(o)) if (!known.has(k)) throw new ScError('SC_BAD_VALUE', `open(): unknown option ${JSON.stringify(k)}`, { option: k });
  const profile = absolute(o.profile, 'profile');
  // `workspace` is the older name of `project`; one of them, never both.
  if (o.project !== undefined && o.workspace !== undefined) throw new ScError('SC_BAD_VALUE', 'open(): give project or workspace (its older name), not both');
  const workspace = o.workspace !== undefined ? canonicalWorkspace(absolute(o.workspace, 'workspace'), '/') : canonicalWorkspace(absolute(o.project, 'project'), '/');
  const policy = o.policyDir === undefined ? shippedPolicy() : loadPolicy(absolute(o.policyDir, 'policyDir'));
  const name = o.name ?? 'embed';
  if (typeof name !== 'string' || !NAME.test(name)) throw new ScError('SC_BAD_VALUE', `name must match ${NAME.source}`);
  if (o.onApproval !== undefined && typeof o.onApproval !== 'function') throw new ScError('SC_BAD_VALUE', 'onApproval must be a function');
  if (o.log !== undefined && typeof o.log !== 'function') throw new ScError('SC_BAD_VALUE', 'log must be a function');
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(o.env ?? {})) if (typeof v === 'string') env[k] = v;
  return Object.freeze({ profile, workspace, policy, env: Object.freeze(env), owner: `host:${name}`, onApproval: o.onApproval, log: o.log ?? (() => {}) });
}
