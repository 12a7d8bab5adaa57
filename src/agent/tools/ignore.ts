/*
 * The .gitignore rules in force for a project directory: the root's and each
 * ancestor's, read through the bounded primitive (a link is refused, a large
 * file is cut at files.gitignore_bytes).
 */
import { ScError } from '../../errors.js';
import { type IgnoreRule, isIgnored, parseGitignore } from '../../engine/gitignore.js';
import { tryReadProjectFile } from '../../util/safe-read.js';
import type { ToolEnv } from './types.js';

export function gitignoreRules(env: ToolEnv, dir: string): IgnoreRule[] {
  const path = dir ? `${dir}/.gitignore` : '.gitignore';
  try {
    const r = tryReadProjectFile(env.ctx.project, path, { cap: env.policy.limits.files.gitignore_bytes, kind: '.gitignore', overflow: 'truncate', links: 'refuse' });
    return r ? parseGitignore(r.bytes.toString('utf8'), dir) : [];
  } catch (err) {
    if (err instanceof ScError) return [];
    throw err;
  }
}

/** A predicate for paths below `dir`, with the rules of `dir` and every ancestor. */
export function loadIgnore(env: ToolEnv, dir: string): (rel: string, isDir: boolean) => boolean {
  const parts = dir ? dir.split('/') : [];
  const rules: IgnoreRule[] = [...gitignoreRules(env, '')];
  for (let i = 1; i <= parts.length; i++) rules.push(...gitignoreRules(env, parts.slice(0, i).join('/')));
  return (rel, isDir) => isIgnored(rules, rel, isDir);
}
