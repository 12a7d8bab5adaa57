/*
 * shadowcode sandbox show [-- COMMAND...]: the boundary a sandboxed command of the
 * project gets now (ops/sandbox.ts), and with COMMAND its exact bwrap command line.
 */
import type { SandboxView } from '../../../gen/types/sandbox-view.js';
import { show } from '../../ops/sandbox.js';
import { check } from '../../schema/validate.js';
import type { CommandSpec } from '../spec.js';

const quote = (w: string) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`);

const NOT_KEPT: Readonly<Record<SandboxView['caches_not_kept'][number]['why'], string>> = {
  'outside the home': 'outside the home: what it writes there is discarded with the sandbox (or refused, where that folder is read-only)',
  'in the project': 'in the project: written into the project, as outside the sandbox',
  'covers the home': 'a folder the home lies in: never bound',
  hidden: 'a hidden path or the profile: never bound',
};

const REFUSED: Readonly<Record<NonNullable<SandboxView['caches_refused']>['why'], string>> = {
  'in the project': 'lies in the project',
  hidden: 'lies in a hidden path or the profile',
  'a link': 'is a link (shadowcode never makes one there)',
  'a sandbox can change it': 'lies where a sandboxed command could change it (a writable grant, or a link into the project or lying in it)',
  'another user can change it': 'lies in a folder another user could change (theirs, or writable by others without the sticky bit); set XDG_CACHE_HOME to a folder of your own',
};

function render(v: SandboxView): string {
  const shownRo = new Set(v.read_only);
  const list = (title: string, paths: readonly string[], mark: (p: string) => string = () => '') => [`${title}:`, ...(paths.length ? paths.map((p) => `  ${p}${mark(p)}`) : ['  (none)'])];
  const granted = new Map(v.grants.paths.map((g) => [g.path, g]));
  const cached = new Map(v.caches.map((c) => [c.at, c]));
  const mark = (p: string) => {
    const g = granted.get(p);
    const c = cached.get(p);
    if (c) return `  (the project's own ${c.name} cache${c.mode === 'beside' ? '' : ` at ${c.from}`}, kept in ${c.private}${c.mode === 'seeded' ? `, filled from ${c.user}` : c.mode === 'beside' && shownRo.has(c.user) ? `; yours, ${c.user}, read-only beside it` : ''})`;
    return g ? `  (granted${g.scope === 'all_projects' ? ' for all projects' : g.scope === 'definition' ? ' by the definition' : ''}${g.secret ? ', SECRET' : ''})` : '';
  };
  const net = v.network.mode === 'all' ? "all (the project's network permission: shadowcode trust --network)" : v.network.mode === 'hosts' ? `only ${v.network.hosts.join(', ')}, through shadowcode's proxy (each connection recorded)` : 'none (only its own loopback)';
  return [
    `sandbox   ${v.sandbox.label}: ${v.sandbox.detail}${v.sandbox.level === 'none' ? ' (nothing below applies: processes run with your full access)' : ''}`,
    `project   ${v.project}`,
    `command   ${v.command ? v.command.map(quote).join(' ') : 'any (name one after -- to see what it needs to start, and its bwrap command line)'}`,
    ...list('read-write', v.read_write, mark),
    ...list('read-only', v.read_only, mark),
    ...list('private (empty; what is written there is discarded)', v.private),
    ...list('hidden', v.hidden),
    `toolchains ${v.toolchains.length ? `${v.toolchains.join(', ')} (found on PATH and in the environment; read-only)` : 'none beyond the system folders'}`,
    `network   ${net}`,
    ...(v.caches_refused ? [`caches not kept: no package cache of this project is kept between runs: its folder ${v.caches_refused.folder} ${REFUSED[v.caches_refused.why]} (${v.caches_refused.at})`] : []),
    ...v.caches_not_kept.map((c) => `cache not kept: ${c.name} writes in ${c.path} (${c.from}), ${NOT_KEPT[c.why]}`),
    ...v.grants.skipped.map((s) => `not applied: ${s.path} (${s.scope === 'all_projects' ? 'all projects' : s.scope}): ${s.why}`),
    ...(v.bwrap ? ['bwrap command line:', `  ${v.bwrap.map(quote).join(' ')}`] : []),
  ].join('\n');
}

export const command: CommandSpec = {
  name: 'sandbox show',
  summary: 'Show what a sandboxed command of the project sees, and its network',
  description:
    'Show the effective boundary of a sandboxed command in the selected project, built the way the next start would build it: what it sees read-write and read-only, what is private to it (the home and /tmp, empty and discarded), what stays hidden (the profile, the secret paths of policy/sandbox.json), the toolchains found on PATH and in the environment (read-only) and the package caches private to the project, its network (none, all, or only granted hosts through the proxy), and the grants that make it (sandbox allow), including any that are not applied now and why. After -- name a command to see what it needs to start, and its exact bwrap command line (the placeholders for missing protected paths and the proxy\'s folder are made at the start itself).',
  options: [],
  args: [{ name: 'COMMAND', required: false, variadic: true, description: 'the literal argv, after --' }],
  examples: ['shadowcode --project ~/src/app sandbox show', 'shadowcode --project ~/src/app --json sandbox show -- npm test'],
  workspace: 'required',
  async run(ctx, { args }) {
    const project = ctx.requireWorkspace('sandbox show');
    const view = check<SandboxView>('sandbox-view', await show(ctx.ops, project, args.length ? args : null), 'SC_INTERNAL', 'sandbox view');
    return { data: view, text: render(view) };
  },
};
