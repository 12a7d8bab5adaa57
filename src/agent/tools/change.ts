/*
 * The one way a task tool changes a file: a second gate decision on
 * `file:write` (the engine's own rule: trusted project, workspace level), then
 * the engine's file-change API, which checkpoints the file's prior state for
 * this task before it writes. The checkpoint is a job event.
 */
import { changeFile, createParents, type WriteResult } from '../../engine/files.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import type { ToolEnv } from './types.js';

export async function writeProjectFile(env: ToolEnv, tool: string, path: string, content: Buffer, parents: boolean): Promise<WriteResult & { created_dirs: string[] }> {
  const { ctx } = env;
  const max = env.policy.limits.agent.write_bytes;
  // Refused before anything is made, so a too-large write leaves no new directory behind.
  if (content.length > max) throw new ScError('SC_LIMIT_REACHED', `a file a task writes may be at most ${max} bytes; this is ${content.length}`);
  const req = env.request('file:write', { resource: { kind: 'file', id: path.slice(0, 512), owner: ctx.owner, project: ctx.project }, args: { path, bytes: content.length, tool } });
  const why = `${tool} in task ${ctx.jobId}: ${ctx.prompt.replace(/\s+/g, ' ').slice(0, 120)}`;
  const r = await enforce(env.gate, req, (ticket) => {
    const created = parents ? createParents(ticket, ctx.project, path) : [];
    return { ...changeFile(ticket, env.db(), ctx.project, ctx.jobId, path, content, why, env.policy.limits.agent.write_bytes), created_dirs: created };
  });
  ctx.emit('checkpoint', { path: r.path, checkpoint_id: r.checkpoint_id, before_sha: r.before_sha, after_sha: r.after_sha, tool, ...(r.created_dirs.length ? { created_dirs: r.created_dirs } : {}) });
  return r;
}
