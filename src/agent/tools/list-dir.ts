/*
 * list_dir: one directory's entries with their kind, never following a link;
 * entries .gitignore ignores are marked so the model knows they are not source.
 *
 *   path ─► resolved against the project ─► outside it (`..`, `/`, an absolute
 *   path elsewhere): SC_PATH_OUTSIDE, nothing listed ─► relative form
 *   (`.github` stays `.github`) ─► the bounded listing
 */
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { ScError } from '../../errors.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { listProjectDir } from '../../util/safe-read.js';
import { loadIgnore } from './ignore.js';
import { type NativeTool, ok, type ToolEnv } from './types.js';

interface Args {
  path?: string;
}

/** The path relative to the project ('' for its root), or SC_PATH_OUTSIDE: never the root by accident. */
function relOf(project: string, path: string | undefined): string {
  const given = path ?? '';
  const rel = relative(project, resolve(project, given));
  if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) throw new ScError('SC_PATH_OUTSIDE', `${JSON.stringify(given.slice(0, 256))} is outside the project; list_dir takes a path relative to the project root`);
  return rel.split(sep).join('/');
}

export const listDir: NativeTool<Args> = {
  name: 'list_dir',
  writes: false,
  describe: (a) => ({ path: a.path ?? '.' }),
  run(env: ToolEnv, a: Args, ticket: GateTicket) {
    assertTicket(ticket, 'task:tool.list_dir');
    const rel = relOf(env.ctx.project, a.path);
    const max = env.policy.limits.agent.list_entries;
    const entries = listProjectDir(env.ctx.project, rel);
    const ignored = loadIgnore(env, rel);
    const lines = entries.slice(0, max).map((e) => {
      const path = rel ? `${rel}/${e.name}` : e.name;
      const mark = e.name === '.git' || ignored(path, e.kind === 'dir') ? ' (ignored)' : '';
      return `${e.kind === 'dir' ? `${e.name}/` : e.name}\t${e.kind}${mark}`;
    });
    const more = entries.length > max ? `\n[${entries.length - max} more entries not shown]` : '';
    return ok(`${rel || '.'}: ${entries.length} entries\n${lines.join('\n')}${more}`);
  },
};
