/*
 * The one door to the generated validators in gen/validators.
 *
 *   check('limits', data, 'SC_POLICY_INVALID', 'policy/limits.json') ─► data typed as Limits
 *                                                                   └─► ScError naming the path
 *
 * ajv runs with allErrors off, so the first failing keyword is reported; that is
 * what a user needs to fix next, and it bounds the work a hostile input can cause.
 */
import * as gen from '../../gen/validators/index.js';
import type { AjvError, GeneratedValidator } from '../../gen/validators/index.js';
import { type ErrorCode, ScError } from '../errors.js';

const byKey = {
  'audit-report': gen.validateAuditReport,
  'catalog-view': gen.validateCatalogView,
  clients: gen.validateClients,
  commands: gen.validateCommands,
  'decision-case': gen.validateDecisionCase,
  definition: gen.validateDefinition,
  'engine-frame': gen.validateEngineFrame,
  'engine-reply': gen.validateEngineReply,
  environment: gen.validateEnvironment,
  error: gen.validateError,
  'gate-request': gen.validateGateRequest,
  grant: gen.validateGrant,
  limits: gen.validateLimits,
  permissions: gen.validatePermissions,
  plugin: gen.validatePlugin,
  'protected-paths': gen.validateProtectedPaths,
  registration: gen.validateRegistration,
  sandbox: gen.validateSandbox,
  'sandbox-grants': gen.validateSandboxGrants,
  'sandbox-view': gen.validateSandboxView,
  settings: gen.validateSettings,
  status: gen.validateStatus,
  'telemetry-view': gen.validateTelemetryView,
} as const satisfies Record<string, GeneratedValidator>;

export type SchemaKey = keyof typeof byKey;

/** Human text for the first ajv error: `at /rules/3/id: must match pattern …`. */
export function describeAjvError(e: AjvError | undefined): { path: string; message: string } {
  if (!e) return { path: '', message: 'is invalid' };
  let message = e.message ?? 'is invalid';
  if (e.keyword === 'additionalProperties' && typeof e.params.additionalProperty === 'string') {
    message = `has unknown property "${e.params.additionalProperty}"`;
  } else if (e.keyword === 'enum' && Array.isArray(e.params.allowedValues)) {
    message = `must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
  }
  return { path: e.instancePath || '/', message };
}

export function isValid(key: SchemaKey, data: unknown): boolean {
  return byKey[key](data);
}

const toolValidators = new Map<string, GeneratedValidator>(
  Object.entries(gen)
    .filter(([k]) => k.startsWith('validateTool'))
    .map(([k, v]) => [k.slice('validateTool'.length), v as GeneratedValidator]),
);

const pascal = (name: string) => name.split('_').map((w) => (w ? w[0]!.toUpperCase() + w.slice(1) : w)).join('');
/** Tool name ─► its validator: every call looks its tool up, and the set is fixed at build. */
const toolValidatorsByName = new Map<string, GeneratedValidator>();

/** Validates a tool's arguments against schemas/tools/<name>.schema.json. */
export function checkToolArgs<T>(tool: string, args: unknown): T {
  let v = toolValidatorsByName.get(tool);
  if (!v) {
    v = toolValidators.get(pascal(tool));
    if (v) toolValidatorsByName.set(tool, v);
  }
  if (!v) throw new ScError('SC_TOOL_UNKNOWN', `no tool named ${tool}`);
  if (v(args)) return args as T;
  const { path, message } = describeAjvError(v.errors?.[0]);
  throw new ScError('SC_TOOL_ARGS_INVALID', `${tool} arguments at ${path}: ${message}`, { path });
}

const agentToolValidators = new Map<string, GeneratedValidator>(
  Object.entries(gen)
    .filter(([k]) => k.startsWith('validateAgentTool'))
    .map(([k, v]) => [k.slice('validateAgentTool'.length), v as GeneratedValidator]),
);

/** Validates a native task tool's arguments (already parsed JSON) against schemas/agent-tools/<name>.schema.json. */
export function checkAgentToolArgs<T>(tool: string, args: unknown): T {
  const v = agentToolValidators.get(pascal(tool));
  if (!v) throw new ScError('SC_TOOL_UNKNOWN', `no task tool named ${tool}`);
  if (v(args)) return args as T;
  const { path, message } = describeAjvError(v.errors?.[0]);
  throw new ScError('SC_TOOL_ARGS_INVALID', `${tool} arguments at ${path}: ${message}`, { path });
}

export function check<T>(key: SchemaKey, data: unknown, code: ErrorCode, what: string): T {
  const v = byKey[key];
  if (v(data)) return data as T;
  const { path, message } = describeAjvError(v.errors?.[0]);
  throw new ScError(code, `${what} at ${path}: ${message}`, { schema: key, path });
}
