/*
 * list_dir: one directory's entries with their kind, never following a link;
 * entries .gitignore ignores are marked so the model knows they are not source.
 */
import { assertTicket, type GateTicket } from '../../ticket.js';
import { listProjectDir } from '../../util/safe-read.js';
import { guardPath } from './change.js';
import { loadIgnore } from './ignore.js';
import { type NativeTool, ok, type ToolEnv } from './types.js';

interface Args {
  path?: string;
}

function relOf(path: string | undefined): string {
  const p = (path ?? '').replace(/^\.\/?/, '').replace(/\/+$/, '');
  return p === '.' ? '' : p;
}

export const listDir: NativeTool<Args> = {
  name: 'list_dir',
  writes: false,
  describe: (a) => ({ path: a.path ?? '.' }),
  run(env: ToolEnv, a: Args, ticket: GateTicket) {
    assertTicket(ticket, 'task:tool.list_dir');
    const rel = relOf(a.path);
    guardPath(env, rel || '.', 'read');
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
