/* shadowcode mcp add FILE: store a definition as config:NAME. Replacing one needs its current --hash. */
import { resolve } from 'node:path';
import { definitionHash, definitionWarnings, normalize, parseText, sandboxWords } from '../../catalog/definition.js';
import { addDefinition } from '../../catalog/store.js';
import { enforce } from '../../policy/gate.js';
import { readUserFile } from '../../util/safe-read.js';
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
    const file = resolve(ctx.io.cwd, args[0] as string);
    const limits = ctx.policy().limits.definitions;
    // A regular file only, read within the definition cap: a FIFO or /dev/zero is refused, not waited on.
    const text = readUserFile(file, { cap: limits.file_bytes, kind: 'definition' }).bytes.toString('utf8');
    const def = normalize(parseText(text, args[0] as string, limits), args[0] as string, limits);
    const hash = options.hash as string | undefined;
    const secrets = ctx.secrets();
    const r = await enforce(ctx.gate(), ctx.request('cli:mcp.add', { args: { id: `config:${def.name}`, hash: definitionHash(def), replace: hash !== undefined } }), (t) => addDefinition(t, ctx.db(), secrets, def, hash));
    const warnings = definitionWarnings(def);
    if (!ctx.json) for (const w of warnings) ctx.io.stderr.write(`shadowcode: warning: ${inert(w)}\n`);
    const said = r.unchanged
      ? `${r.id} is already stored with this content; nothing changed\nhash ${r.hash}`
      : `${r.replaced ? 'replaced' : 'added'} ${r.id}\nhash ${r.hash}\nenable it for a project with: shadowcode --project DIR mcp enable ${r.id} --hash ${r.hash}`;
    // Literal env values never stay in the definition: say where they went.
    const moved = r.unchanged ? [] : Object.keys(def.env).sort();
    const movedLine = moved.length ? `\nthe literal value${moved.length > 1 ? 's' : ''} of ${moved.join(', ')} moved into the profile's secret store (listed by shadowcode secret list); the stored definition keeps only the name${moved.length > 1 ? 's' : ''}` : '';
    const sandboxLine = def.transport === 'stdio' && !r.unchanged ? `\nits sandbox: ${sandboxWords(def.sandbox)}` : '';
    return { data: { ...r, needs_network: def.needs_network, ...(def.sandbox ? { sandbox: def.sandbox } : {}), warnings, env_moved_to_secrets: moved }, text: `${said}${sandboxLine}${movedLine}` };
  },
};
