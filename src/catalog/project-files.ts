/*
 * Definitions a project carries: direct .yaml, .yml and .json files in
 * .shadowcode/mcp/ and .shadow/mcp/ (no recursion). Re-read and re-hashed at
 * every use. A link, or a file whose real path leaves the project, is refused
 * and reported, never followed. A project file cannot grant itself anything:
 * only `shadowcode mcp enable` does, with its hash.
 */
import { lstatSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { insideProject } from '../util/confine.js';
import { asScError, ScError } from '../errors.js';
import { type DefLimits, definitionHash, type Normalized, normalize, parseText } from './definition.js';

export const PROJECT_DIRS = ['.shadowcode/mcp', '.shadow/mcp'];

export type ProjectDef = { id: string; file: string; ok: true; def: Normalized; hash: string } | { id: string; file: string; ok: false; error: ScError };

export function projectDefinitions(project: string, limits: DefLimits): ProjectDef[] {
  const out: ProjectDef[] = [];
  for (const dir of PROJECT_DIRS) {
    let names: string[];
    try {
      const st = lstatSync(join(project, dir));
      if (!st.isDirectory()) continue;
      names = readdirSync(join(project, dir)).filter((n) => /\.(ya?ml|json)$/.test(n)).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      const rel = `${dir}/${name}`;
      const id = `project:${rel}`;
      const abs = join(project, rel);
      try {
        const st = lstatSync(abs);
        if (st.isSymbolicLink()) throw new ScError('SC_DEF_REFUSED', `${rel} is a symbolic link; project definitions must be plain files`);
        if (!st.isFile()) continue;
        if (!insideProject(project, realpathSync(abs))) throw new ScError('SC_DEF_REFUSED', `${rel} resolves outside the project`);
        const def = normalize(parseText(readFileSync(abs, 'utf8'), rel, limits), rel, limits);
        out.push({ id, file: rel, ok: true, def, hash: definitionHash(def) });
      } catch (err) {
        out.push({ id, file: rel, ok: false, error: asScError(err) });
      }
    }
  }
  return out;
}
