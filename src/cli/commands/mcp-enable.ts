/* shadowcode mcp enable ID --hash H: grant one definition, pinned by hash, to this trusted project. */
import { currentHashes } from '../../catalog/view.js';
import { projectDefinitions } from '../../catalog/project-files.js';
import { enableGrant } from '../../catalog/store.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { getProject } from '../../store/projects.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'mcp enable',
  summary: 'Grant a definition to the trusted project, pinned by its hash',
  description: 'Grant one definition to the selected project. The project must be trusted, --hash must be the definition\'s current hash (so you enable exactly what you reviewed), and at most four servers may be enabled per project.',
  options: [{ name: 'hash', type: 'string', value: 'HASH', description: 'the hash shown by shadowcode mcp (required)' }],
  args: [{ name: 'ID', required: true, description: 'config:NAME, plugin:P/S or project:.shadowcode/mcp/FILE' }],
  examples: ['shadowcode --workspace ~/src/app mcp enable config:my-tools --hash 3f9c…'],
  workspace: 'required',
  async run(ctx, { args, options }) {
    const project = ctx.requireWorkspace('mcp enable');
    const id = args[0] as string;
    const hash = options.hash as string | undefined;
    if (!hash) throw new ScError('SC_USAGE', `mcp enable needs --hash; see the hash of ${id} in shadowcode --workspace ${project} mcp`);
    const db = ctx.db();
    if (!getProject(db, project).trusted) throw new ScError('SC_PROJECT_UNTRUSTED', `${project} is not trusted; run shadowcode --workspace ${project} trust first`);
    const refused = id.startsWith('project:') ? projectDefinitions(project, ctx.policy().limits.definitions).find((p) => p.id === id && !p.ok) : undefined;
    if (refused && !refused.ok) throw new ScError('SC_DEF_REFUSED', `${id} cannot be enabled: ${refused.error.message}`);
    const current = currentHashes(db, project, ctx.policy()).get(id);
    const g = await enforce(ctx.gate(), ctx.request('cli:mcp.enable', { resource: { kind: 'definition', id, hash }, args: { id, hash } }), (t) =>
      enableGrant(t, db, project, id, hash, current, ctx.policy().limits.grants.enabled_servers_per_project),
    );
    return { data: { grant: g }, text: `enabled ${id} for ${project} at hash ${g.hash}` };
  },
};
