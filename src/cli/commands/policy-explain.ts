/*
 * shadowcode policy explain ACTION: which rules decide, for a connection with the given flags.
 *
 *   ACTION             ─► the gate's rules (policy/permissions.json), as today
 *   file:write:PATH    ─► the gate's rules for a task's write at --level (default workspace)
 *                         + the protected-path rule that decides PATH (policy/protected-paths.json)
 *   file:read:PATH     ─► the protected-path rule for a task's read of PATH
 *   either             ─► what an approved command may do there (policy/protected-scan.ts)
 */
import { NATIVE_TOOLS } from '../../agent/tools/index.js';
import { ScError } from '../../errors.js';
import { isKnownAction, knownActions } from '../../policy/actions.js';
import { explain } from '../../policy/gate.js';
import { type PathAccess, pathVerdict } from '../../policy/protected-paths.js';
import { sandboxAccess } from '../../policy/protected-scan.js';
import { nearest } from '../../util/suggest.js';
import { getProject } from '../../store/projects.js';
import type { Level } from '../../ticket.js';
import type { CommandSpec } from '../spec.js';

const PATH_ACTION = /^file:(write|read):(.+)$/s;

const SANDBOX_WORDS = {
  hidden: 'not visible to approved commands',
  read_only: 'read-only for approved commands',
  created_later: 'not there yet, and not held: an approved command could create it; it is named after the command ends (a protected_created event)',
  writable: 'writable for approved commands',
} as const;

export const command: CommandSpec = {
  name: 'policy explain',
  summary: 'Show which policy rules decide an action',
  description:
    "Evaluate one action against the shipped policy without doing it, for a connection to the selected project (or the CLI user with --as cli), and print the rules that decided. file:write:PATH and file:read:PATH show what decides a task's write or read of that project path, the protected-path rule included (git metadata, host configs and the profile are refused; manifests and build files need their own approval), and what an approved command may do with it in the sandbox.",
  options: [
    { name: 'as', type: 'string', value: 'KIND', choices: ['stdio', 'http', 'cli'], default: 'stdio', description: 'who asks' },
    { name: 'allow-write', type: 'boolean', description: 'as if the server was started with --allow-write' },
    { name: 'allow-approvals', type: 'boolean', description: 'as if the server was started with --allow-approvals' },
    { name: 'level', type: 'string', value: 'LEVEL', choices: ['read_only', 'workspace', 'elevated'], description: 'the per-task level requested' },
    { name: 'list', type: 'boolean', description: 'list the actions the policy names, and the families it covers by pattern' },
  ],
  args: [{ name: 'ACTION', required: false, description: 'an action such as tool:shadow_memory.append, cli:trust or file:write:.git/config' }],
  examples: ['shadowcode --workspace ~/src/app policy explain tool:shadow_memory.append --allow-write', 'shadowcode --workspace ~/src/app policy explain file:write:.git/config', 'shadowcode policy explain --list'],
  workspace: 'optional',
  async run(ctx, { args, options }) {
    const known = knownActions(ctx.policy().permissions, [...NATIVE_TOOLS.keys()].map((n) => `task:tool.${n}`));
    if (options.list === true) {
      if (args[0] !== undefined) throw new ScError('SC_USAGE', 'policy explain --list takes no ACTION');
      return { data: known, text: [...known.names, ...known.patterns.map((p) => `${p}  (any action of this family)`)].join('\n') };
    }
    if (args[0] === undefined) throw new ScError('SC_USAGE', 'policy explain needs ACTION, or --list to see the actions; see shadowcode policy explain --help');
    const path = ctx.workspace;
    const project = path === undefined ? null : (({ trusted, level }) => ({ path, trusted, level }))(getProject(ctx.db(), path));
    const asked = args[0] as string;
    const file = PATH_ACTION.exec(asked);
    if (file) {
      const root = ctx.requireWorkspace('policy explain file:…');
      const access = file[1] as PathAccess;
      const target = file[2] as string;
      const v = pathVerdict(ctx.policy(), root, target, access, ctx.profile.dir);
      const pathRule = v.rule ? { list: v.list, id: v.rule, effect: v.effect, description: v.description, matched: v.matched, ...(v.via ? { via: v.via } : {}) } : null;
      const sandbox = sandboxAccess(ctx.policy(), root, v.matched, v);
      // A task's write is the engine acting for it at the task's level: the gate decides that part.
      const gate = access === 'write'
        ? explain(ctx.policy(), { action: 'file:write', principal: { kind: 'engine', owner: 'explain', allow_write: true, allow_approvals: false }, project, requested_level: (options.level as Level | undefined) ?? 'workspace' }, ctx.homes())
        : null;
      const allow = v.effect !== 'refuse' && (gate ? gate.allow : true);
      const verdict = !allow ? 'DENY' : v.effect === 'approve' ? 'ASK' : 'ALLOW';
      const data = { action: `file:${access}`, path: target, allow, needs_approval: allow && v.effect === 'approve', path_rule: pathRule, sandbox, ...(gate ? { ceiling: gate.ceiling, rules: gate.rules } : {}), policy_hash: ctx.policy().hash };
      const lines = [`${verdict} file:${access} ${target}${gate ? ` (ceiling ${gate.ceiling})` : ''}`];
      if (gate) lines.push(...gate.rules.map((r) => `  ${r.effect} ${r.id}: ${r.description}`));
      lines.push(pathRule ? `  ${v.effect === 'refuse' ? 'refuse' : 'own approval with the diff'} ${pathRule.list} ${pathRule.id}: ${pathRule.description} (matched ${pathRule.matched}${v.via ? `: ${v.via}` : ''})` : '  no protected-path rule applies');
      lines.push(`  sandbox: ${SANDBOX_WORDS[sandbox]}`);
      return { data, text: lines.join('\n') };
    }
    const kind = options.as as 'stdio' | 'http' | 'cli';
    const d = explain(ctx.policy(), {
      action: asked,
      principal: { kind, owner: kind === 'cli' ? 'cli' : 'explain', allow_write: options['allow-write'] === true, allow_approvals: options['allow-approvals'] === true },
      project,
      ...(options.level ? { requested_level: options.level as Level } : {}),
    }, ctx.homes());
    const action = asked;
    const isKnown = isKnownAction(known, action);
    const suggestion = isKnown ? undefined : nearest(action, known.names);
    const data = { action, known: isKnown, ...(suggestion ? { suggestion } : {}), allow: d.allow, ceiling: d.ceiling, rules: d.rules, policy_hash: ctx.policy().hash };
    const unknownLine = isKnown ? [] : [`  ${action} is not an action this policy knows${suggestion ? `; did you mean ${suggestion}?` : ''} (shadowcode policy explain --list shows them)`];
    const text = [`${d.allow ? 'ALLOW' : 'DENY'} ${action} (ceiling ${d.ceiling})`, ...unknownLine, ...d.rules.map((r) => `  ${r.effect} ${r.id}: ${r.description}`)].join('\n');
    return { data, text };
  },
};
