/*
 * shadowcode mcp enable ID --hash H: grant one definition, pinned by hash, to this trusted project.
 *
 *   ops enableServer (gate 'cli:mcp.enable' ─► grant stored) ─► review (ops/catalog.ts refreshPin): the
 *   server started once under the new grant, its tools shown and pinned here,
 *   in front of the user ─► a server that cannot be read keeps its grant, but
 *   tasks offer none of its tools until mcp tools ID --refresh pins them
 *   (--no-review: the same, without starting it)
 */
import { sandboxWords } from '../../catalog/definition.js';
import { asScError, ScError } from '../../errors.js';
import { refreshPin } from '../../ops/catalog.js';
import { enableServer } from '../../ops/servers.js';
import type { CommandSpec } from '../spec.js';
import { pinReport, readLine } from './mcp-tools.js';
import { inert, inertBlock } from '../../util/inert-text.js';
import { abortOnStopSignal } from '../../util/stop-signals.js';

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
    const { grant: g, listed, missing } = await enableServer(ctx.ops, { id, hash });
    // What the server will get beyond the sandbox's defaults is part of what is enabled here: said before its first start.
    const sandbox = listed?.transport === 'stdio' ? { sandbox: listed.sandbox ?? null } : {};
    const missingLine = missing.length ? `\nnot there yet, so not shown to it until you create ${missing.length === 1 ? 'it' : 'them'}: ${inert(missing.join(', '))}` : '';
    // An id can be a project file's name; a read's failure can quote the server.
    const enabled = `enabled ${inert(id)} for ${inert(project)} at hash ${g.hash}${listed?.transport === 'stdio' ? `\nits sandbox: ${inert(sandboxWords(listed.sandbox))}${missingLine}` : ''}`;
    const again = `shadowcode --project ${inert(project)} mcp tools ${inert(id)} --refresh`;
    if (options['no-review'] === true) {
      return { data: { grant: g, ...sandbox, review: null }, text: `${enabled}\nits tool catalog was not read (--no-review); tasks offer none of its tools until ${again} reads and pins it` };
    }
    try {
      // Ctrl-C while the server is read stops it through the connection's close (its sandbox and placeholders with it).
      const stop = abortOnStopSignal();
      const r = await refreshPin(ctx.ops, id, stop.signal).finally(() => stop.off());
      const shown = pinReport(ctx, project, id);
      return { data: { grant: g, ...sandbox, review: { ok: true, state: r.state, hash: r.hash }, catalog: shown.data }, text: `${enabled}\n${readLine(r.state, r.hash)}\n${shown.text}` };
    } catch (err) {
      const e = asScError(err);
      return {
        data: { grant: g, ...sandbox, review: { ok: false, code: e.code, message: e.message, ...(e.detail?.stderr_tail !== undefined ? { stderr_tail: e.detail.stderr_tail } : {}) } },
        text: `${enabled}\nits tool catalog could not be read (${e.code}: ${inert(firstLine(e.message))})${rest(e.message) ? `${inertBlock(rest(e.message))}\n` : '; '}tasks offer none of its tools until ${again} reads and pins it`,
      };
    }
  },
};
