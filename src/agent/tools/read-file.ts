/*
 * read_file: lines of one project file, numbered, through the bounded
 * primitive (confined to the project's real path; FIFOs, devices and links
 * out are refused, never opened). At most agent.read_bytes are scanned.
 */
import { ScError } from '../../errors.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { readProjectLines } from '../../util/safe-read.js';
import { guardPath } from './change.js';
import { fail, type NativeTool, ok, type ToolEnv } from './types.js';

interface Args {
  path: string;
  start_line?: number;
  end_line?: number;
}

export const readFile: NativeTool<Args> = {
  name: 'read_file',
  writes: false,
  describe: (a) => ({ path: a.path }),
  run(env: ToolEnv, a: Args, ticket: GateTicket) {
    assertTicket(ticket, 'task:tool.read_file');
    guardPath(env, a.path, 'read');
    const l = env.policy.limits.agent;
    const start = a.start_line ?? 1;
    if (a.end_line !== undefined && a.end_line < start) return fail('SC_TOOL_ARGS_INVALID', `end_line ${a.end_line} is before start_line ${start}`);
    const count = a.end_line !== undefined ? a.end_line - start + 1 : l.read_lines_default;
    const r = readProjectLines(env.ctx.project, a.path, { start, count, cap: l.read_bytes, kind: 'file' });
    if (r.lines.some((line) => line.includes('\u0000'))) throw new ScError('SC_FILE_REFUSED', `${a.path} looks binary (it contains NUL bytes); it is not shown`);
    if (r.lines.length === 0) return ok(r.size === 0 ? `${a.path} is empty.` : `${a.path} has no line ${start}.`);
    const last = start + r.lines.length - 1;
    const body = r.lines.map((line, i) => `${start + i}\t${line}`).join('\n');
    const more = r.truncated ? `\n[more lines follow; read from start_line ${last + 1}]` : '';
    return ok(`${a.path} lines ${start}-${last} (${r.size} bytes):\n${body}${more}`);
  },
};
