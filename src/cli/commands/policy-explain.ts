/* shadowcode policy explain ACTION: which rules decide, for a connection with the given flags. */
import { explain } from '../../policy/gate.js';
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
  ],
  args: [{ name: 'ACTION', required: true, description: 'an action such as tool:shadow_memory.append or cli:trust' }],
  examples: ['shadowcode --workspace ~/src/app policy explain tool:shadow_memory.append --allow-write'],
  workspace: 'optional',
  async run(ctx, { args, options }) {
    const path = ctx.workspace;
    const project = path === undefined ? null : (({ trusted, level }) => ({ path, trusted, level }))(getProject(ctx.db(), path));
    const kind = options.as as 'stdio' | 'http' | 'cli';
    const d = explain(ctx.policy(), {
      action: args[0] as string,
      principal: { kind, owner: kind === 'cli' ? 'cli' : 'explain', allow_write: options['allow-write'] === true, allow_approvals: options['allow-approvals'] === true },
      project,
      ...(options.level ? { requested_level: options.level as Level } : {}),
    });
    const data = { action: args[0], allow: d.allow, ceiling: d.ceiling, rules: d.rules, policy_hash: ctx.policy().hash };
    const text = [`${d.allow ? 'ALLOW' : 'DENY'} ${args[0]} (ceiling ${d.ceiling})`, ...d.rules.map((r) => `  ${r.effect} ${r.id}: ${r.description}`)].join('\n');
    return { data, text };
  },
};
