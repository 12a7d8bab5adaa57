/*
 * Reads policy/*.json, validates each against its schema, deep-freezes the
 * result and stamps it with a content hash.
 *
 *   policy/limits.json ──┐
 *   policy/permissions.json ─► parse ─► check(schema) ─► freeze ─► Policy { …, hash }
 *   policy/environment.json ┤
 *   policy/clients.json ────┤
 *   policy/sandbox.json ────┤
 *   policy/protected-paths.json ┤
 *   policy/commands.json ───┘
 *
 * A broken file is one SC_POLICY_INVALID naming the file and the JSON path, at
 * start-up, before anything is served. The hash is over canonical JSON, so it
 * changes exactly when what the policy says changes, and it is stamped on every
 * audited decision.
 *
 * A built bundle carries the sha256 of each shipped file that passed its schema when
 * it was built (scripts/build.mjs): the same bytes meet the same validators, so their
 * check is not run again. That is about a tenth of a command's start-up; any edit,
 * however small, is checked.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Clients } from '../../gen/types/clients.js';
import type { Commands } from '../../gen/types/commands.js';
import type { Environment } from '../../gen/types/environment.js';
import type { Limits } from '../../gen/types/limits.js';
import type { Permissions } from '../../gen/types/permissions.js';
import type { Sandbox as SandboxPolicy } from '../../gen/types/sandbox.js';
import type { ProtectedPaths } from '../../gen/types/protected-paths.js';
import { ScError } from '../errors.js';
import { check, type SchemaKey } from '../schema/validate.js';
import { canonicalJson, sha256 } from '../util/canonical-json.js';
import { deepFreeze } from '../util/freeze.js';
import { packageRoot } from '../util/paths.js';

export interface Policy {
  readonly limits: Limits;
  readonly permissions: Permissions;
  readonly environment: Environment;
  readonly clients: Clients;
  readonly sandbox: SandboxPolicy;
  readonly protected_paths: ProtectedPaths;
  readonly commands: Commands;
  readonly hash: string;
  readonly dir: string;
}

const FILES = [
  ['limits', 'limits.json', 'limits'],
  ['permissions', 'permissions.json', 'permissions'],
  ['environment', 'environment.json', 'environment'],
  ['clients', 'clients.json', 'clients'],
  ['sandbox', 'sandbox.json', 'sandbox'],
  ['protected_paths', 'protected-paths.json', 'protected-paths'],
  ['commands', 'commands.json', 'commands'],
] as const satisfies ReadonlyArray<readonly [keyof Omit<Policy, 'hash' | 'dir'>, string, SchemaKey]>;

declare const __SHADOWCODE_VERIFIED_POLICY__: Readonly<Record<string, string>> | undefined;

/** file name ─► sha256 of the bytes that passed its schema at build time; none when run from source. */
const VERIFIED: Readonly<Record<string, string>> = typeof __SHADOWCODE_VERIFIED_POLICY__ === 'object' ? __SHADOWCODE_VERIFIED_POLICY__ : {};

/** Whether exactly these bytes of `file` passed its schema when the running bundle was built. */
export function verifiedAtBuild(file: string, text: string, verified: Readonly<Record<string, string>> = VERIFIED): boolean {
  const want = verified[file];
  return want !== undefined && sha256(text) === want;
}

function readText(path: string, label: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new ScError('SC_POLICY_INVALID', `${label} cannot be read: ${(err as NodeJS.ErrnoException).code ?? err}`, { file: label });
  }
}

function parseJson(text: string, label: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ScError('SC_POLICY_INVALID', `${label} is not valid JSON: ${(err as Error).message}`, { file: label });
  }
}

/** Cross-field rules a JSON Schema cannot say. */
function checkConsistency(p: Omit<Policy, 'hash' | 'dir'>): void {
  const ids = new Set<string>();
  p.permissions.rules.forEach((rule, i) => {
    if (ids.has(rule.id)) {
      throw new ScError('SC_POLICY_INVALID', `policy/permissions.json at /rules/${i}/id: duplicate rule id "${rule.id}"`, { file: 'policy/permissions.json', path: `/rules/${i}/id` });
    }
    ids.add(rule.id);
  });
  const pairs: Array<[string, number, number]> = [
    ['/tokens', p.limits.tokens.min_length, p.limits.tokens.max_length],
    ['/definitions/timeout_sec', p.limits.definitions.timeout_sec_min, p.limits.definitions.timeout_sec_max],
    ['/inspection/page_size', p.limits.inspection.page_size_default, p.limits.inspection.page_size_max],
  ];
  for (const [path, lo, hi] of pairs) {
    if (lo > hi) throw new ScError('SC_POLICY_INVALID', `policy/limits.json at ${path}: minimum ${lo} exceeds maximum ${hi}`, { file: 'policy/limits.json', path });
  }
}

export function loadPolicy(dir: string = join(packageRoot(), 'policy')): Policy {
  const parts: Record<string, unknown> = {};
  for (const [field, file, schema] of FILES) {
    const label = `policy/${file}`;
    const text = readText(join(dir, file), label);
    const value = parseJson(text, label);
    parts[field] = verifiedAtBuild(file, text) ? value : check(schema, value, 'SC_POLICY_INVALID', label);
  }
  const body = parts as unknown as Omit<Policy, 'hash' | 'dir'>;
  checkConsistency(body);
  return deepFreeze({ ...body, hash: sha256(canonicalJson(body)), dir });
}

let cached: Policy | undefined;
/** The shipped policy, loaded once per process. */
export function shippedPolicy(): Policy {
  return (cached ??= loadPolicy());
}
