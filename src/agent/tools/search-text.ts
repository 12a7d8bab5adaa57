/*
 * search_text: matching lines in the project's text files.
 *
 *   base (dir or file, confined) ─► walk in name order, never through a link,
 *   skipping .git and what .gitignore ignores ─► each regular file ≤ search_file_bytes,
 *   read through the bounded primitive, NUL = binary = skipped ─► lines matching
 *   ─► at most search_matches, search_files files, search_depth deep
 *
 * A regular expression comes from the model, so it runs on V8's linear-time
 * engine (the `l` flag): no pattern can backtrack for ever and stall the
 * engine. Patterns that need backtracking (back-references, lookaround) are
 * refused with a message saying so.
 */
import { setFlagsFromString } from 'node:v8';
import { ScError } from '../../errors.js';
import { type IgnoreRule, isIgnored } from '../../engine/gitignore.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { listProjectDir, readProjectFile } from '../../util/safe-read.js';
import { profileInside } from '../../policy/protected-paths.js';
import { V8_FLAGS } from '../../v8-flags.js';
import { guardPath, profileDir } from './change.js';
import { gitignoreRules } from './ignore.js';
import { fail, type NativeTool, ok, type ToolEnv } from './types.js';

// Also set by the boot module before it compiles the CLI (see src/v8-flags.ts); here for the library.
for (const flag of V8_FLAGS) setFlagsFromString(flag);

interface Args {
  pattern: string;
  regex?: boolean;
  path?: string;
  ignore_case?: boolean;
}

const LINE_CHARS = 400;

function matcher(a: Args, maxChars: number): ((line: string) => boolean) | string {
  if (a.pattern.length > maxChars) return `the pattern is longer than ${maxChars} characters`;
  if (!a.regex) {
    const needle = a.ignore_case ? a.pattern.toLowerCase() : a.pattern;
    return a.ignore_case ? (line) => line.toLowerCase().includes(needle) : (line) => line.includes(needle);
  }
  try {
    const re = new RegExp(a.pattern, a.ignore_case ? 'il' : 'l');
    return (line) => re.test(line);
  } catch (err) {
    return `${(err as Error).message} (patterns run in linear time: no back-references or lookaround)`;
  }
}

export const searchText: NativeTool<Args> = {
  name: 'search_text',
  writes: false,
  describe: (a) => ({ pattern: a.pattern, regex: a.regex === true, path: a.path ?? '.' }),
  run(env: ToolEnv, a: Args, ticket: GateTicket) {
    assertTicket(ticket, 'task:tool.search_text');
    const l = env.policy.limits.agent;
    const test = matcher(a, l.pattern_chars);
    if (typeof test === 'string') return fail('SC_TOOL_ARGS_INVALID', test);
    const project = env.ctx.project;
    const base = (a.path ?? '').replace(/^\.\/?/, '').replace(/\/+$/, '');
    guardPath(env, base || '.', 'read');
    // The profile, when it lies inside the project, is never searched.
    const hidden = env.policy.protected_paths.profile.refuse_reads ? profileInside(project, profileDir(env)) : null;
    const isHidden = (rel: string) => hidden !== null && (rel.toLowerCase() === hidden.toLowerCase() || rel.toLowerCase().startsWith(`${hidden.toLowerCase()}/`));
    const matches: string[] = [];
    let files = 0;
    let stopped: string | null = null;

    const searchFile = (rel: string) => {
      if (files >= l.search_files) return void (stopped ??= `stopped after ${l.search_files} files`);
      files++;
      let bytes: Buffer;
      try {
        bytes = readProjectFile(project, rel, { cap: l.search_file_bytes, kind: 'file', links: 'refuse' }).bytes;
      } catch (err) {
        if (err instanceof ScError) return; // too large, refused or gone: not searched
        throw err;
      }
      if (bytes.includes(0)) return;
      const lines = bytes.toString('utf8').split('\n');
      for (let i = 0; i < lines.length; i++) {
        const line = (lines[i] as string).replace(/\r$/, '');
        if (!test(line)) continue;
        if (matches.length >= l.search_matches) return void (stopped ??= `stopped at ${l.search_matches} matches`);
        matches.push(`${rel}:${i + 1}: ${line.length > LINE_CHARS ? `${line.slice(0, LINE_CHARS)}…` : line}`);
      }
    };

    const walk = (dir: string, depth: number, rules: IgnoreRule[]) => {
      const entries = listProjectDir(project, dir);
      const local = entries.some((e) => e.name === '.gitignore' && e.kind === 'file') ? [...rules, ...gitignoreRules(env, dir)] : rules;
      for (const e of entries) {
        if (stopped) return;
        const rel = dir ? `${dir}/${e.name}` : e.name;
        if (e.name === '.git' || isHidden(rel) || isIgnored(local, rel, e.kind === 'dir')) continue;
        if (e.kind === 'file') searchFile(rel);
        else if (e.kind === 'dir' && depth < l.search_depth) walk(rel, depth + 1, local);
      }
    };

    const kind = base === '' ? 'dir' : (listProjectDir(project, base.includes('/') ? base.slice(0, base.lastIndexOf('/')) : '').find((e) => e.name === base.slice(base.lastIndexOf('/') + 1))?.kind ?? 'missing');
    if (kind === 'missing') throw new ScError('SC_FILE_NOT_FOUND', `${a.path} does not exist in the project`);
    if (kind === 'file') searchFile(base);
    else if (kind === 'dir') {
      const ancestors: IgnoreRule[] = [];
      const parts = base ? base.split('/') : [];
      for (let i = 0; i < parts.length; i++) ancestors.push(...gitignoreRules(env, parts.slice(0, i).join('/')));
      walk(base, 0, ancestors);
    } else throw new ScError('SC_FILE_REFUSED', `${a.path} is a ${kind}; search a directory or a regular file`);

    const head = `${matches.length} matching line${matches.length === 1 ? '' : 's'} in ${files} file${files === 1 ? '' : 's'} searched${stopped ? ` (${stopped}; narrow the path or pattern)` : ''}`;
    return ok(matches.length ? `${head}:\n${matches.join('\n')}` : `${head}.`);
  },
};
