/*
 * shadowcode mcp tools ID [--refresh | --accept HASH]: the tool catalog pinned with a grant
 * (ops/catalog.ts), as tables and a diff.
 *
 *   no pin yet ─► says none was reviewed, so tasks offer none of its tools
 *   --refresh ─► ops refreshPin: the server started once, its catalog read
 *     (scrubbed); no pin yet ─► it becomes the pin, here in front of you
 *   pinned = last seen ─► the tools
 *   last seen differs ─► the pinned tools, then a diff (added, removed, changed
 *     descriptions and schema paths) and the --accept line for exactly that catalog
 *   --accept HASH ─► ops acceptPin (gate 'cli:mcp.tools.accept') ─► the last seen catalog becomes the pin
 */
import type { CanonicalTool, CatalogDiff } from '../../client/catalog.js';
import { ScError } from '../../errors.js';
import { acceptPin, refreshPin, showPin } from '../../ops/catalog.js';
import type { Ctx } from '../context.js';
import type { CommandSpec } from '../spec.js';
import type { Style } from '../style.js';
import { table } from '../style.js';
import { inert } from '../../util/inert-text.js';
import { abortOnStopSignal } from '../../util/stop-signals.js';

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
  const pin = showPin(ctx.ops, id);
  if (pin.pinned_hash === null) {
    return {
      data: pin,
      text: `no catalog of ${id} has been reviewed for ${project}, so tasks offer none of its tools; read and pin it with shadowcode --project ${project} mcp tools ${id} --refresh`,
    };
  }
  const st = ctx.style;
  const text = [
    `${inert(id)}: catalog ${pin.pinned_hash} pinned ${pin.pinned_at}, ${pin.tools.length} ${pin.tools.length === 1 ? 'tool' : 'tools'}`,
    pin.tools.length ? table(['TOOL', 'HINT', 'DESCRIPTION (the server\'s own text)'], toolRows(pin.tools), st) : 'no tools',
    ...(pin.last_match
      ? [`last connection ${pin.last_seen_at}: ${st.state('matched')}`]
      : [
          `last connection ${pin.last_seen_at}: ${st.bad('CHANGED')} to ${pin.last_hash}; tasks refuse this server until you accept it`,
          ...diffText(pin.diff, st),
          `to accept exactly this catalog: shadowcode --project ${project} mcp tools ${id} --accept ${pin.last_hash}`,
        ]),
  ].join('\n');
  return { data: pin, text };
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
    const accept = options.accept as string | undefined;
    if (accept !== undefined) {
      const r = await acceptPin(ctx.ops, id, accept);
      return {
        data: r,
        text: r.changed ? `accepted the catalog ${r.pinned_hash} of ${id}; tasks may use it again (was ${r.previous_hash})` : `the catalog ${r.pinned_hash} of ${id} is already the pinned one; nothing changed`,
      };
    }
    if (options.refresh === true) {
      // Ctrl-C while the server is read stops it through the connection's close (its sandbox and placeholders with it).
      const stop = abortOnStopSignal();
      const r = await refreshPin(ctx.ops, id, stop.signal).finally(() => stop.off());
      const shown = pinReport(ctx, project, id);
      return { data: { ...shown.data, read: { state: r.state, hash: r.hash } }, text: `${readLine(r.state, r.hash)}\n${shown.text}` };
    }
    return pinReport(ctx, project, id);
  },
};
