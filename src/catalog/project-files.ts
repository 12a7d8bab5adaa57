/*
 * Definitions a project carries: direct .yaml, .yml and .json files in
 * .shadowcode/mcp/ and .shadow/mcp/ (no recursion). Re-read and re-hashed at
 * every use, through the bounded primitive (src/util/safe-read.ts). A link, a
 * FIFO or device, a file over the definition cap, or a file whose real path
 * leaves the project, is refused and reported with its code, never followed.
 * A project file cannot grant itself anything: only `shadowcode mcp enable`
 * does, with its hash.
 */
import { asScError, ScError } from '../errors.js';
import { type DirEntry, listProjectDir, readProjectFile } from '../util/safe-read.js';
import { type DefLimits, definitionHash, type Normalized, normalize, parseText } from './definition.js';

export const PROJECT_DIRS = ['.shadowcode/mcp', '.shadow/mcp'];

export type ProjectDef = { id: string; file: string; ok: true; def: Normalized; hash: string } | { id: string; file: string; ok: false; error: ScError };

export function projectDefinitions(project: string, limits: DefLimits): ProjectDef[] {
  const out: ProjectDef[] = [];
  for (const dir of PROJECT_DIRS) {
    let entries: DirEntry[];
    try {
      entries = listProjectDir(project, dir).filter((e) => /\.(ya?ml|json)$/.test(e.name));
    } catch (err) {
      const e = asScError(err);
      if (e.code === 'SC_FILE_NOT_FOUND') continue;
      // A linked or escaping definitions directory is reported, never listed through.
      out.push({ id: `project:${dir}`, file: dir, ok: false, error: new ScError('SC_DEF_REFUSED', `${dir}: ${e.message}`) });
      continue;
    }
    for (const { name, kind } of entries) {
      const rel = `${dir}/${name}`;
      const id = `project:${rel}`;
      try {
        if (kind === 'link') throw new ScError('SC_DEF_REFUSED', `${rel} is a symbolic link; project definitions must be plain files`);
        if (kind === 'dir') continue;
        // Bounded before parsing: a FIFO or device is refused unopened, a sparse giant costs one fstat.
        const text = readProjectFile(project, rel, { cap: limits.file_bytes, kind: 'definition', links: 'refuse' }).bytes.toString('utf8');
        const def = normalize(parseText(text, rel, limits), rel, limits);
        out.push({ id, file: rel, ok: true, def, hash: definitionHash(def) });
      } catch (err) {
        out.push({ id, file: rel, ok: false, error: asScError(err) });
      }
    }
  }
  return out;
}
