/*
 * shadowcode mcp enable ID --hash H: grant one definition, pinned by hash, to this trusted project.
 *
 *   gate 'cli:mcp.enable' ─► grant stored ─► review (client/review.ts): the
 *   server started once under the new grant, its tools shown and pinned here,
 *   in front of the user ─► a server that cannot be read keeps its grant, but
 *   tasks offer none of its tools until mcp tools ID --refresh pins them
 *   (--no-review: the same, without starting it)
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { sandboxWords } from '../../catalog/definition.js';
import { currentHashes, grantStates } from '../../catalog/view.js';
import { projectDefinitions } from '../../catalog/project-files.js';
import { enableGrant } from '../../catalog/store.js';
import { reviewCatalog } from '../../client/review.js';
import { asScError, ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { getProject } from '../../store/projects.js';
import type { CommandSpec } from '../spec.js';
import { pinReport, readLine } from './mcp-tools.js';
import { inert, inertBlock } from '../../util/inert-text.js';

const firstLine = (m: string) => m.split('\n')[0] as string;
/** What follows a message's first line (a server's stderr tail and the hint), on lines of its own. */
const rest = (m: string) => (m.includes('\n') ? `\n${m.slice(m.indexOf('\n') + 1)}` : '');

export const command: CommandSpec = {
  name: 'mcp enable',
  summary: "Grant an external server to the trusted project's tasks, pinned by its hash",
  description: 'Grant one definition to the selected project. The project must be trusted, --hash must be the definition\'s current hash (so you enable exactly what you reviewed), and at most four servers may be enabled per project. The server is then started once under the new grant and its tools are shown and pinned: tasks offer only a catalog pinned in front of you (see mcp tools --refresh).',
  options: [
    { name: 'hash', type: 'string', value: 'HASH', description: 'the hash shown by shadowcode mcp (required)' },
    { name: 'no-review', type: 'boolean', description: 'grant without starting the server; tasks offer none of its tools until mcp tools ID --refresh' },
  ],
  args: [{ name: 'ID', required: true, description: 'config:NAME, plugin:P/S or project:.shadowcode/mcp/FILE' }],
  examples: ['shadowcode --project ~/src/app mcp enable config:my-tools --hash 3f9c…'],
  workspace: 'required',
  async run(ctx, { args, options }) {
    const project = ctx.requireWorkspace('mcp enable');
    const id = args[0] as string;
    const hash = options.hash as string | undefined;
    if (!hash) throw new ScError('SC_USAGE', `mcp enable needs --hash; see the hash of ${id} in shadowcode --project ${project} mcp`);
    const db = ctx.db();
    if (!getProject(db, project).trusted) throw new ScError('SC_PROJECT_UNTRUSTED', `${project} is not trusted; run shadowcode --project ${project} trust first`);
    const refused = id.startsWith('project:') ? projectDefinitions(project, ctx.policy().limits.definitions).find((p) => p.id === id && !p.ok) : undefined;
    if (refused && !refused.ok) throw new ScError('SC_DEF_REFUSED', `${id} cannot be enabled: ${refused.error.message}`);
    const current = currentHashes(db, project, ctx.policy()).get(id);
    const g = await enforce(ctx.gate(), ctx.request('cli:mcp.enable', { resource: { kind: 'definition', id, hash }, args: { id, hash } }), (t) =>
      enableGrant(t, db, project, id, hash, current, ctx.policy().limits.grants.enabled_servers_per_project),
    );
    // What the server will get beyond the sandbox's defaults is part of what is enabled here: said before its first start.
    const listed = grantStates(db, project, ctx.policy()).definitions.find((d) => d.id === id);
    const sandbox = listed?.transport === 'stdio' ? { sandbox: listed.sandbox ?? null } : {};
    const home = ctx.io.env.HOME;
    const missing = [...(listed?.sandbox?.read ?? []), ...(listed?.sandbox?.write ?? [])].filter((p) => {
      const abs = p.startsWith('~/') ? (home ? join(home, p.slice(2)) : null) : p;
      return abs !== null && !existsSync(abs);
    });
    const missingLine = missing.length ? `\nnot there yet, so not shown to it until you create ${missing.length === 1 ? 'it' : 'them'}: ${inert(missing.join(', '))}` : '';
    // An id can be a project file's name; a read's failure can quote the server.
    const enabled = `enabled ${inert(id)} for ${inert(project)} at hash ${g.hash}${listed?.transport === 'stdio' ? `\nits sandbox: ${inert(sandboxWords(listed.sandbox))}${missingLine}` : ''}`;
    const again = `shadowcode --project ${inert(project)} mcp tools ${inert(id)} --refresh`;
    if (options['no-review'] === true) {
      return { data: { grant: g, ...sandbox, review: null }, text: `${enabled}\nits tool catalog was not read (--no-review); tasks offer none of its tools until ${again} reads and pins it` };
    }
    try {
      const r = await reviewCatalog({ env: ctx.io.env, secrets: ctx.secrets(), policy: ctx.policy(), db, gateEnv: ctx.gate() }, ctx.request('mcp:connect'), project, id);
      const shown = pinReport(ctx, project, id);
      return { data: { grant: g, ...sandbox, review: { ok: true, state: r.pin, hash: r.catalog_hash }, catalog: shown.data }, text: `${enabled}\n${readLine(r.pin, r.catalog_hash)}\n${shown.text}` };
    } catch (err) {
      const e = asScError(err);
      return {
        data: { grant: g, ...sandbox, review: { ok: false, code: e.code, message: e.message, ...(e.detail?.stderr_tail !== undefined ? { stderr_tail: e.detail.stderr_tail } : {}) } },
        text: `${enabled}\nits tool catalog could not be read (${e.code}: ${inert(firstLine(e.message))})${rest(e.message) ? `${inertBlock(rest(e.message))}\n` : '; '}tasks offer none of its tools until ${again} reads and pins it`,
      };
    }
  },
};
