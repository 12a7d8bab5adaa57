/* shadowcode policy explain ACTION: which rules decide, for a connection with the given flags. */
import { NATIVE_TOOLS } from '../../agent/tools/index.js';
import { ScError } from '../../errors.js';
import { isKnownAction, knownActions } from '../../policy/actions.js';
import { explain } from '../../policy/gate.js';
import { nearest } from '../../util/suggest.js';
import { getProject } from '../../store/projects.js';
import type { Level } from '../../ticket.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'policy explain',
  summary: 'Show which policy rules decide an action',
  description:
    'Evaluate one action against the shipped policy without doing it, for a connection to the selected project (or the CLI user with --as cli), and print the rules that decided.',
  options: [
    { name: 'as', type: 'string', value: 'KIND', choices: ['stdio', 'http', 'cli'], default: 'stdio', description: 'who asks' },
    { name: 'allow-write', type: 'boolean', description: 'as if the server was started with --allow-write' },
    { name: 'allow-approvals', type: 'boolean', description: 'as if the server was started with --allow-approvals' },
    { name: 'level', type: 'string', value: 'LEVEL', choices: ['read_only', 'workspace', 'elevated'], description: 'the per-task level requested' },
    { name: 'list', type: 'boolean', description: 'list the actions the policy names, and the families it covers by pattern' },
  ],
  args: [{ name: 'ACTION', required: false, description: 'an action such as tool:shadow_memory.append or cli:trust' }],
  examples: ['shadowcode --workspace ~/src/app policy explain tool:shadow_memory.append --allow-write', 'shadowcode policy explain --list'],
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
    const kind = options.as as 'stdio' | 'http' | 'cli';
    const d = explain(ctx.policy(), {
      action: args[0] as string,
      principal: { kind, owner: kind === 'cli' ? 'cli' : 'explain', allow_write: options['allow-write'] === true, allow_approvals: options['allow-approvals'] === true },
      project,
      ...(options.level ? { requested_level: options.level as Level } : {}),
    });
    const action = args[0];
    const isKnown = isKnownAction(known, action);
    const suggestion = isKnown ? undefined : nearest(action, known.names);
    const data = { action, known: isKnown, ...(suggestion ? { suggestion } : {}), allow: d.allow, ceiling: d.ceiling, rules: d.rules, policy_hash: ctx.policy().hash };
    const unknownLine = isKnown ? [] : [`  ${action} is not an action this policy knows${suggestion ? `; did you mean ${suggestion}?` : ''} (shadowcode policy explain --list shows them)`];
    const text = [`${d.allow ? 'ALLOW' : 'DENY'} ${action} (ceiling ${d.ceiling})`, ...unknownLine, ...d.rules.map((r) => `  ${r.effect} ${r.id}: ${r.description}`)].join('\n');
    return { data, text };
  },
};
