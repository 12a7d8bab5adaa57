/* write_file: a whole file's new content, checkpointed first; missing parent directories inside the project are made. */
import { assertTicket, type GateTicket } from '../../ticket.js';
import { writeProjectFile } from './change.js';
import { type NativeTool, ok, type ToolEnv } from './types.js';

interface Args {
  path: string;
  content: string;
}

export const writeFile: NativeTool<Args> = {
  name: 'write_file',
  writes: true,
  describe: (a) => ({ path: a.path, bytes: Buffer.byteLength(a.content) }),
  async run(env: ToolEnv, a: Args, ticket: GateTicket) {
    assertTicket(ticket, 'task:tool.write_file');
    const r = await writeProjectFile(env, 'write_file', a.path, Buffer.from(a.content, 'utf8'), true);
    return ok(`${r.before_sha ? 'Replaced' : 'Created'} ${r.path} (${Buffer.byteLength(a.content)} bytes).`);
  },
};
