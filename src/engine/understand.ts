/*
 * A bounded map of a project: languages, manifests, entry points and detected
 * test commands. The walk never follows links, skips .git, honours .gitignore
 * files, and stops at the file and depth limits from policy, saying so.
 * Every file it reads (.gitignore, manifests) goes through the bounded
 * primitive; one it refuses (a FIFO, a device, a link out of the project, an
 * oversized manifest) is listed in `refused` with its code, never followed.
 */
import { extname } from 'node:path';
import { ScError } from '../errors.js';
import { type DirEntry, listProjectDir, tryReadProjectFile } from '../util/safe-read.js';
import { detectTestCommands, readManifest, type RefusedFile, type TestCandidate } from './detect-tests.js';
import { type IgnoreRule, isIgnored, parseGitignore } from './gitignore.js';

const LANGUAGES: Record<string, string> = {
  '.ts': 'TypeScript', '.tsx': 'TypeScript', '.mts': 'TypeScript', '.cts': 'TypeScript',
  '.js': 'JavaScript', '.jsx': 'JavaScript', '.mjs': 'JavaScript', '.cjs': 'JavaScript',
  '.py': 'Python', '.rs': 'Rust', '.go': 'Go', '.java': 'Java', '.kt': 'Kotlin', '.scala': 'Scala',
  '.rb': 'Ruby', '.php': 'PHP', '.c': 'C', '.h': 'C', '.cc': 'C++', '.cpp': 'C++', '.hpp': 'C++',
  '.cs': 'C#', '.swift': 'Swift', '.sh': 'Shell', '.sql': 'SQL', '.html': 'HTML', '.css': 'CSS',
  '.md': 'Markdown', '.json': 'JSON', '.yaml': 'YAML', '.yml': 'YAML', '.toml': 'TOML',
};
const MANIFESTS = new Set([
  'package.json', 'Cargo.toml', 'go.mod', 'pyproject.toml', 'setup.py', 'setup.cfg', 'requirements.txt', 'Makefile',
  'pom.xml', 'build.gradle', 'build.gradle.kts', 'Gemfile', 'composer.json', 'CMakeLists.txt', 'deno.json', 'tsconfig.json',
]);
const ENTRY_NAMES = new Set(['main.rs', 'main.go', '__main__.py', 'manage.py', 'main.py', 'app.py', 'index.ts', 'index.js', 'main.ts', 'main.js', 'Main.java']);

export interface ProjectMap {
  readonly project: string;
  readonly files_scanned: number;
  readonly truncated: boolean;
  readonly truncated_reason: string | null;
  readonly top_level: string[];
  readonly languages: Array<{ language: string; files: number }>;
  readonly manifests: string[];
  readonly entry_points: string[];
  readonly test_commands: TestCandidate[];
  readonly refused: RefusedFile[];
}

export function understand(project: string, limits: { understand_files: number; understand_depth: number; understand_bytes: number }, fileLimits: { manifest_bytes: number; gitignore_bytes: number }): ProjectMap {
  const counts = new Map<string, number>();
  const manifests: string[] = [];
  const entries: string[] = [];
  let files = 0;
  let truncated: string | null = null;
  let topLevel: string[] = [];
  const refused: RefusedFile[] = [];
  const gitignore = (rel: string): string => {
    const path = rel ? `${rel}/.gitignore` : '.gitignore';
    try {
      return tryReadProjectFile(project, path, { cap: fileLimits.gitignore_bytes, kind: '.gitignore', overflow: 'truncate', links: 'refuse' })?.bytes.toString('utf8') ?? '';
    } catch (err) {
      if (!(err instanceof ScError)) throw err;
      refused.push({ path, code: err.code, message: err.message });
      return '';
    }
  };

  const walk = (rel: string, depth: number, rules: IgnoreRule[]): void => {
    if (truncated) return;
    let list: DirEntry[];
    try {
      list = listProjectDir(project, rel);
    } catch {
      return;
    }
    list.sort((a, b) => a.name.localeCompare(b.name));
    const gi = list.find((d) => d.name === '.gitignore' && d.kind === 'file');
    const local = gi ? [...rules, ...parseGitignore(gitignore(rel), rel)] : rules;
    if (!rel) topLevel = list.filter((d) => d.name !== '.git' && !isIgnored(local, d.name, d.kind === 'dir')).map((d) => (d.kind === 'dir' ? `${d.name}/` : d.name));
    for (const d of list) {
      if (truncated) return;
      const path = rel ? `${rel}/${d.name}` : d.name;
      if (d.name === '.git' || d.kind === 'link') continue;
      if (isIgnored(local, path, d.kind === 'dir')) continue;
      if (d.kind === 'dir') {
        if (depth + 1 >= limits.understand_depth) continue;
        walk(path, depth + 1, local);
      } else if (d.kind === 'file') {
        if (++files > limits.understand_files) {
          truncated = `stopped after ${limits.understand_files} files`;
          return;
        }
        const lang = LANGUAGES[extname(d.name).toLowerCase()];
        if (lang) counts.set(lang, (counts.get(lang) ?? 0) + 1);
        if (MANIFESTS.has(d.name) && depth <= 2) manifests.push(path);
        if (ENTRY_NAMES.has(d.name) && depth <= 3) entries.push(path);
      }
    }
  };
  walk('', 0, []);

  const pkgEntries: string[] = [];
  try {
    const pkg = JSON.parse(readManifest(project, 'package.json', fileLimits.manifest_bytes, refused) ?? '{}') as { main?: unknown; bin?: unknown };
    if (typeof pkg.main === 'string') pkgEntries.push(pkg.main);
    if (typeof pkg.bin === 'string') pkgEntries.push(pkg.bin);
    if (pkg.bin && typeof pkg.bin === 'object') for (const v of Object.values(pkg.bin)) if (typeof v === 'string') pkgEntries.push(v);
  } catch {
    /* no package.json, or not JSON */
  }
  const testCommands = detectTestCommands(project, fileLimits, refused);
  const map = {
    project,
    files_scanned: Math.min(files, limits.understand_files),
    truncated: truncated !== null,
    truncated_reason: truncated as string | null,
    top_level: topLevel,
    languages: [...counts].map(([language, n]) => ({ language, files: n })).sort((a, b) => b.files - a.files || a.language.localeCompare(b.language)),
    manifests,
    entry_points: [...new Set([...pkgEntries.map((p) => p.replace(/^\.\//, '')), ...entries])],
    test_commands: testCommands,
    refused,
  };
  // Keep the map within its byte budget by halving the longest lists, and say so.
  while (Buffer.byteLength(JSON.stringify(map)) > limits.understand_bytes) {
    const longest = (['top_level', 'manifests', 'entry_points', 'refused'] as const).reduce((a, b) => (map[b].length > map[a].length ? b : a));
    if (map[longest].length <= 1) break;
    const half = <T>(list: T[]): T[] => list.slice(0, Math.floor(list.length / 2));
    if (longest === 'refused') map.refused = half(map.refused);
    else map[longest] = half(map[longest]);
    map.truncated = true;
    map.truncated_reason = `lists shortened to fit ${limits.understand_bytes} bytes`;
  }
  return map;
}

/** The map as a markdown section, for saving into the project note. */
export function mapAsNote(map: ProjectMap, at: string): string {
  return [
    `## Project map (${at})`,
    `- languages: ${map.languages.map((l) => `${l.language} (${l.files})`).join(', ') || 'none found'}`,
    `- manifests: ${map.manifests.join(', ') || 'none'}`,
    `- entry points: ${map.entry_points.join(', ') || 'none found'}`,
    `- test commands: ${map.test_commands.map((c) => c.argv.join(' ')).join('; ') || 'none detected'}`,
    ...(map.refused.length ? [`- not read: ${map.refused.map((r) => `${r.path} (${r.code})`).join(', ')}`] : []),
    '',
  ].join('\n');
}
