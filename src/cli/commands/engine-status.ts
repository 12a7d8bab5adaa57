/* shadowcode engine status: whether the profile's shared engine runs, and what it holds. */
import { engineFiles } from '../../engine/daemon/files.js';
import { controlRequest } from '../../engine/daemon/remote.js';
import { findShared } from '../../ops/engine.js';
import type { CommandSpec } from '../spec.js';

interface Status {
  owners: Array<{ owner: string; transport: string; project: string; jobs_accepted: number }>;
  jobs: Array<{ id: string; kind: string; state: string; owner: string; project: string; title: string }>;
  background: Array<{ id: string; pid: number; project: string; argv: string[]; started_at: string }>;
}

export const command: CommandSpec = {
  name: 'engine status',
  summary: "Show whether the profile's shared engine runs, its owners, jobs and background processes",
  description: "Show the profile's shared engine: its pid and socket, the ownership sockets open (owner, project, jobs accepted), its unfinished jobs and the background processes it keeps. Without a running engine, says so; servers then use a temporary engine of their own.",
  options: [],
  args: [],
  examples: ['shadowcode engine status', 'shadowcode --json engine status'],
  workspace: 'ignored',
  async run(ctx) {
    const files = engineFiles(ctx.profile.dir);
    const shared = await findShared(ctx.ops);
    if (!shared) return { data: { running: false, profile: ctx.profile.dir, socket: files.sock }, text: `no engine running for ${ctx.profile.dir}` };
    const { engine, data } = await controlRequest(ctx.gate(), files, { kind: 'cli', owner: 'cli' }, { type: 'status' });
    const s = data as unknown as Status;
    const lines = [
      `engine     pid ${engine.pid}, shadowcode ${engine.version}, since ${engine.started_at}`,
      `socket     ${files.sock}`,
      `owners     ${s.owners.length}${s.owners.map((o) => `\n  ${o.owner}  ${o.project}  ${o.jobs_accepted} job(s)`).join('')}`,
      `jobs       ${s.jobs.length}${s.jobs.map((j) => `\n  ${j.id}  ${j.kind}  ${j.state}  ${j.owner}  ${j.title}`).join('')}`,
      `background ${s.background.length}${s.background.map((b) => `\n  ${b.id}  pid ${b.pid}  ${b.project}  ${JSON.stringify(b.argv)}`).join('')}`,
    ];
    return { data: { running: true, profile: ctx.profile.dir, ...data }, text: lines.join('\n') };
  },
};
