/*
 * A .gitignore matcher for the project walk: comments, negation, directory-only
 * and anchored patterns, `*`, `?`, `[…]` and `**`. Rules of a nested .gitignore
 * apply below its directory; the last matching rule wins.
 */
export interface IgnoreRule {
  readonly base: string; // directory of the .gitignore, relative to the project ('' at the root)
  readonly negate: boolean;
  readonly dirOnly: boolean;
  readonly anchored: boolean;
  readonly re: RegExp;
}

function globToRegex(glob: string): string {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const atStart = i === 0 || glob[i - 1] === '/';
        if (glob[i + 2] === '/' && atStart) {
          re += '(?:.*/)?';
          i += 2;
        } else {
          re += '.*';
          i += 1;
        }
      } else re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end === -1) re += '\\[';
      else {
        let cls = glob.slice(i + 1, end);
        if (cls.startsWith('!')) cls = `^${cls.slice(1)}`;
        re += `[${cls.replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else if (c === '\\' && i + 1 < glob.length) re += `\\${glob[++i]}`;
    else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return re;
}

export function parseGitignore(text: string, base: string): IgnoreRule[] {
  const rules: IgnoreRule[] = [];
  for (const raw of text.split(/\r?\n/)) {
    let line = raw.replace(/(?<!\\)\s+$/, '');
    if (line === '' || line.startsWith('#')) continue;
    let negate = false;
    if (line.startsWith('!')) {
      negate = true;
      line = line.slice(1);
    } else if (line.startsWith('\\!') || line.startsWith('\\#')) line = line.slice(1);
    const dirOnly = line.endsWith('/');
    if (dirOnly) line = line.slice(0, -1);
    const anchored = line.includes('/');
    if (line.startsWith('/')) line = line.slice(1);
    if (line === '') continue;
    rules.push({ base, negate, dirOnly, anchored, re: new RegExp(`^${globToRegex(line)}$`) });
  }
  return rules;
}

/** Whether a project-relative path is ignored by the rules in force. */
export function isIgnored(rules: readonly IgnoreRule[], rel: string, isDir: boolean): boolean {
  let ignored = false;
  for (const r of rules) {
    if (r.dirOnly && !isDir) continue;
    if (r.base && !rel.startsWith(`${r.base}/`)) continue;
    const local = r.base ? rel.slice(r.base.length + 1) : rel;
    const subject = r.anchored ? local : local.slice(local.lastIndexOf('/') + 1);
    if (r.re.test(subject)) ignored = !r.negate;
  }
  return ignored;
}
