/* shadowcode mcp add FILE: store a definition as config:NAME (ops/servers.ts addServer). Replacing one needs its current --hash. */
import { resolve } from 'node:path';
import { sandboxWords } from '../../catalog/definition.js';
import { addServer } from '../../ops/servers.js';
import type { CommandSpec } from '../spec.js';
import { inert } from '../../util/inert-text.js';

export const command: CommandSpec = {
  name: 'mcp add',
  summary: "Store an external MCP server definition for delegated tasks (YAML or JSON)",
  description:
    'Read a definition file (a .json file as strict JSON, anything else as YAML), validate it and store it as config:NAME. It is inert until enabled for a project. Nothing is executed or contacted. Adding identical content again changes nothing; replacing an existing definition needs --hash with its current hash (from shadowcode mcp). A ${ in the command is stored literally, with a warning. A stdio server\'s sandbox key (what it reads, writes and reaches beyond the sandbox\'s defaults) is shown.',
  options: [{ name: 'hash', type: 'string', value: 'HASH', description: 'the current hash of the definition being replaced' }],
  args: [{ name: 'FILE', required: true, description: 'the definition file: a regular file within the definition size cap (a FIFO or device is refused)' }],
  examples: ['shadowcode mcp add ./my-tools.yaml', 'shadowcode mcp add ./my-tools.yaml --hash 3f9c…'],
  workspace: 'ignored',
  async run(ctx, { args, options }) {
    const hash = options.hash as string | undefined;
    const { stored: r, definition: def, warnings, env_moved_to_secrets: moved } = await addServer(ctx.ops, { file: resolve(ctx.io.cwd, args[0] as string), shown: args[0] as string, ...(hash !== undefined ? { hash } : {}) });
    if (!ctx.json) for (const w of warnings) ctx.io.stderr.write(`shadowcode: warning: ${inert(w)}\n`);
    const said = r.unchanged
      ? `${r.id} is already stored with this content; nothing changed\nhash ${r.hash}`
      : `${r.replaced ? 'replaced' : 'added'} ${r.id}\nhash ${r.hash}\nenable it for a project with: shadowcode --project DIR mcp enable ${r.id} --hash ${r.hash}`;
    // Literal env values never stay in the definition: say where they went.
    const movedLine = moved.length ? `\nthe literal value${moved.length > 1 ? 's' : ''} of ${moved.join(', ')} moved into the profile's secret store (listed by shadowcode secret list); the stored definition keeps only the name${moved.length > 1 ? 's' : ''}` : '';
    const sandboxLine = def.transport === 'stdio' && !r.unchanged ? `\nits sandbox: ${sandboxWords(def.sandbox)}` : '';
    return { data: { ...r, needs_network: def.needs_network, ...(def.sandbox ? { sandbox: def.sandbox } : {}), warnings, env_moved_to_secrets: moved }, text: `${said}${sandboxLine}${movedLine}` };
  },
};
