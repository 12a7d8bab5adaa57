/*
 * shadowcode mcp tools ID [--refresh | --accept HASH]: the tool catalog pinned with a grant.
 *
 *   no pin yet ─► says none was reviewed, so tasks offer none of its tools
 *   --refresh ─► client/review.ts: the server started once, its catalog read
 *     (scrubbed); no pin yet ─► it becomes the pin, here in front of you
 *   pinned = last seen ─► the tools
 *   last seen differs ─► the pinned tools, then a diff (added, removed, changed
 *     descriptions and schema paths) and the --accept line for exactly that catalog
 *   --accept HASH ─► gate 'cli:mcp.tools.accept' ─► the last seen catalog becomes the pin
 */
import { type CanonicalTool, type CatalogDiff, diffCatalogs } from '../../client/catalog.js';
import { acceptCatalog, readPin } from '../../client/pins.js';
import { storedDefinition, storedDefinitions } from '../../catalog/store.js';
import { reviewCatalog } from '../../client/review.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import type { Ctx } from '../context.js';
import type { CommandSpec } from '../spec.js';
import type { Style } from '../style.js';
import { table } from '../style.js';
import { nearest } from '../../util/suggest.js';
import { inert } from '../../util/inert-text.js';

const firstLine = (s: string, n = 72) => {
  const l = s.split('\n')[0] ?? '';
  return l.length > n ? `${l.slice(0, n - 1)}…` : l;
};

function toolRows(tools: readonly CanonicalTool[]): string[][] {
  return tools.map((t) => [t.name, t.annotations.readOnlyHint === true ? 'read-only' : '-', firstLine(t.description) || '-']);
}

function diffText(d: CatalogDiff, st: Style): string[] {
  const out: string[] = [];
  // Tool names, descriptions and schema paths are the server's own text.
  for (const n of d.added) out.push(`  ${st.bad('+')} ${inert(n)} (new tool)`);
  for (const n of d.removed) out.push(`  ${st.bad('-')} ${inert(n)} (removed)`);
  for (const c of d.changed) {
    out.push(`  ${st.bad('~')} ${inert(c.name)}: ${c.fields.join(', ')} changed`);
    if (c.description) {
      out.push(`      description was: ${inert(JSON.stringify(firstLine(c.description.before, 200)))}`);
      out.push(`      description now: ${inert(JSON.stringify(firstLine(c.description.after, 200)))}`);
    }
    for (const [field, paths] of Object.entries(c.paths)) if (paths.length) out.push(`      ${field} at ${paths.slice(0, 8).map(inert).join(', ')}${paths.length > 8 ? ', …' : ''}`);
  }
  return out;
}

/** What a review read found, in one line. */
export function readLine(state: string, hash: string): string {
  if (state === 'pinned') return `read the catalog now and pinned it (${hash}); tasks may offer these tools`;
  if (state === 'match') return `read the catalog now: it matches the pin`;
  return `read the catalog now: it differs from the pin (${hash}); tasks refuse this server until you accept it`;
}

/** The pinned catalog of a grant, and what the last read saw (text and data). */
export function pinReport(ctx: Ctx, project: string, id: string): { data: Record<string, unknown>; text: string } {
  const db = ctx.db();
  const pin = readPin(db, project, id);
  // With no pin, a stored id (config:, plugin:) that names no definition is a mistake, not an
  // empty catalog. A project file's definition (project:) lives in the project, not the store.
  if (!pin && !id.startsWith('project:') && storedDefinition(db, id) === undefined) {
    const suggestion = nearest(id, storedDefinitions(db).map((d) => d.id));
    throw new ScError('SC_DEF_NOT_FOUND', `no stored definition ${id}${suggestion ? `; did you mean ${suggestion}?` : ''} (shadowcode mcp lists them)`, { id, ...(suggestion ? { suggestion } : {}) });
  }
  if (!pin) {
    return {
      data: { id, pinned_hash: null, last_hash: null, last_match: null, tools: [], diff: null },
      text: `no catalog of ${id} has been reviewed for ${project}, so tasks offer none of its tools; read and pin it with shadowcode --project ${project} mcp tools ${id} --refresh`,
    };
  }
  const match = pin.pinned_hash === pin.seen_hash;
  const diff = match ? null : diffCatalogs(pin.pinned, pin.seen);
  const st = ctx.style;
  const text = [
    `${inert(id)}: catalog ${pin.pinned_hash} pinned ${pin.pinned_at}, ${pin.pinned.length} ${pin.pinned.length === 1 ? 'tool' : 'tools'}`,
    pin.pinned.length ? table(['TOOL', 'HINT', 'DESCRIPTION (the server\'s own text)'], toolRows(pin.pinned), st) : 'no tools',
    ...(match
      ? [`last connection ${pin.seen_at}: ${st.state('matched')}`]
      : [
          `last connection ${pin.seen_at}: ${st.bad('CHANGED')} to ${pin.seen_hash}; tasks refuse this server until you accept it`,
          ...diffText(diff as CatalogDiff, st),
          `to accept exactly this catalog: shadowcode --project ${project} mcp tools ${id} --accept ${pin.seen_hash}`,
        ]),
  ].join('\n');
  return { data: { id, pinned_hash: pin.pinned_hash, pinned_at: pin.pinned_at, last_hash: pin.seen_hash, last_seen_at: pin.seen_at, last_match: match, tools: pin.pinned, ...(match ? { diff: null } : { diff, seen_tools: pin.seen }) }, text };
}

export const command: CommandSpec = {
  name: 'mcp tools',
  summary: "Show an external server's pinned tool catalog (what tasks are offered); review and accept a changed one",
  description:
    "Show the tool catalog pinned with the selected project's grant of a definition: the catalog read in front of you by mcp enable or --refresh. Tasks offer no tool of a server whose catalog was never pinned. --refresh starts the server once and reads its catalog again. When a read saw a different catalog (a new, removed or reworded tool, a changed schema or annotation), tasks refuse the server and this command shows what changed. --accept HASH makes exactly that seen catalog the pin; a hash that is not the one last seen is refused.",
  options: [
    { name: 'refresh', type: 'boolean', description: 'start the server once and read its catalog now (the first read becomes the pin)' },
    { name: 'accept', type: 'string', value: 'HASH', description: 'accept the last seen catalog, named by its hash' },
  ],
  args: [{ name: 'ID', required: true, description: 'the definition id (see shadowcode mcp)' }],
  examples: ['shadowcode --project ~/src/app mcp tools config:my-tools', 'shadowcode --project ~/src/app mcp tools config:my-tools --refresh', 'shadowcode --project ~/src/app mcp tools config:my-tools --accept bc50ebeaa16ae9cc95d7e2fd1c5abd329ad38eaa3f248da7327faa07b2ccb175'],
  workspace: 'required',
  async run(ctx, { args, options }) {
    if (options.refresh === true && options.accept !== undefined) throw new ScError('SC_USAGE', 'mcp tools takes --refresh or --accept HASH, not both: read the catalog first, then accept the hash it shows');
    const project = ctx.requireWorkspace('mcp tools');
    const id = args[0] as string;
    const db = ctx.db();
    const accept = options.accept as string | undefined;
    if (accept !== undefined) {
      if (!/^[0-9a-f]{64}$/.test(accept)) throw new ScError('SC_BAD_VALUE', `--accept takes the full 64-character catalog hash that shadowcode --project ${project} mcp tools ${id} shows`);
      const r = await enforce(ctx.gate(), ctx.request('cli:mcp.tools.accept', { resource: { kind: 'catalog', id, hash: accept }, args: { id, hash: accept } }), (t) => acceptCatalog(t, db, project, id, accept));
      const changed = r.previous_hash !== r.pinned_hash;
      return {
        data: { id, pinned_hash: r.pinned_hash, previous_hash: r.previous_hash, changed },
        text: changed ? `accepted the catalog ${r.pinned_hash} of ${id}; tasks may use it again (was ${r.previous_hash})` : `the catalog ${r.pinned_hash} of ${id} is already the pinned one; nothing changed`,
      };
    }
    if (options.refresh === true) {
      const r = await reviewCatalog({ env: ctx.io.env, secrets: ctx.secrets(), policy: ctx.policy(), db, gateEnv: ctx.gate() }, ctx.request('mcp:connect'), project, id);
      const shown = pinReport(ctx, project, id);
      return { data: { ...shown.data, read: { state: r.pin, hash: r.catalog_hash } }, text: `${readLine(r.pin, r.catalog_hash)}\n${shown.text}` };
    }
    return pinReport(ctx, project, id);
  },
};
