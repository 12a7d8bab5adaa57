/*
 * The one way a task tool changes a file.
 *
 *   path ─► protected paths (policy/protected-paths.json):
 *             never_write or the profile ─► SC_PATH_PROTECTED, nothing asked
 *             needs_approval (manifests, build files, CI) ─► its own exact approval
 *               showing the complete diff, at every level ─► denied: SC_APPROVAL_DENIED
 *   ─► gate `file:write` (trusted project, workspace level) ─► the engine's file-change
 *   API, which checkpoints the prior state and writes through a directory held open
 *   (its real path checked against the same rules again) ─► a checkpoint job event
 *
 * An approved change is written only while the file still has the content the
 * diff was made from (else SC_FILE_CHANGED).
 */
import { dirname, join, relative } from 'node:path';
import { unifiedDiff } from '../../engine/diff.js';
import { changeFile, createParents, readState, type WriteResult } from '../../engine/files.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { type PathAccess, pathVerdict, protectedError } from '../../policy/protected-paths.js';
import { fileWriteRequest } from '../../policy/requests.js';
import { confinedPath } from '../../util/confine.js';
import type { ToolEnv } from './types.js';

/** The profile directory of the engine running this task: the directory of its state.db. */
export function profileDir(env: ToolEnv): string {
  return dirname(env.db().name);
}

/** Refuses a read or write of a protected path (SC_PATH_PROTECTED); returns the verdict otherwise. */
export function guardPath(env: ToolEnv, path: string, access: PathAccess) {
  const v = pathVerdict(env.policy, env.ctx.project, path, access, profileDir(env));
  if (v.effect === 'refuse') throw protectedError(v, path, access);
  return v;
}

export async function writeProjectFile(env: ToolEnv, tool: string, path: string, content: Buffer, parents: boolean): Promise<WriteResult & { created_dirs: string[] }> {
  const { ctx } = env;
  const max = env.policy.limits.agent.write_bytes;
  // Refused before anything is made, so a too-large write leaves no new directory behind.
  if (content.length > max) throw new ScError('SC_LIMIT_REACHED', `a file a task writes may be at most ${max} bytes; this is ${content.length}`);
  const verdict = guardPath(env, path, 'write');
  let expectBeforeSha: string | null | undefined;
  if (verdict.effect === 'approve') {
    const rel = relative(ctx.project, confinedPath(ctx.project, path, { mustExist: false }));
    const before = readState(ctx.project, rel, max);
    const diff = unifiedDiff(before.content?.toString('utf8') ?? '', content.toString('utf8'), before.exists ? `a/${rel}` : '/dev/null', `b/${rel}`, Number.MAX_SAFE_INTEGER);
    const outcome = await ctx.requestApproval('write', {
      path: rel, tool, rule: verdict.rule, reason: verdict.description, before_sha: before.sha, bytes: content.length,
      diff: diff || `(no change to ${rel})\n`,
    });
    if (outcome !== 'approved') throw new ScError('SC_APPROVAL_DENIED', `the change to ${rel} was ${outcome} and was not written`);
    expectBeforeSha = before.sha;
  }
  const profile = profileDir(env);
  // The directory actually opened is judged again: a link swapped in after the check above is caught.
  const guard = (realDir: string, name: string) => {
    const v = pathVerdict(env.policy, ctx.project, join(realDir, name), 'write', profile);
    if (v.effect === 'refuse') throw protectedError(v, path, 'write');
    if (v.effect === 'approve' && verdict.effect !== 'approve') throw new ScError('SC_WRITE_RACED', `${path} now leads to ${v.matched}, whose change needs its own approval; nothing was written`);
  };
  const req = fileWriteRequest(ctx, env.trust(), path, { path, bytes: content.length, tool, ...(verdict.rule ? { protected_rule: verdict.rule } : {}) });
  const why = `${tool} in task ${ctx.jobId}: ${ctx.prompt.replace(/\s+/g, ' ').slice(0, 120)}`;
  const r = await enforce(env.gate, req, (ticket) => {
    const created = parents ? createParents(ticket, ctx.project, path) : [];
    return { ...changeFile(ticket, env.db(), ctx.project, ctx.jobId, path, content, why, max, { guard, ...(expectBeforeSha !== undefined ? { expectBeforeSha } : {}) }), created_dirs: created };
  });
  ctx.emit('checkpoint', { path: r.path, checkpoint_id: r.checkpoint_id, before_sha: r.before_sha, after_sha: r.after_sha, tool, ...(r.created_dirs.length ? { created_dirs: r.created_dirs } : {}) });
  return r;
}
