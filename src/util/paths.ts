/*
 * Where shadowcode's own files are. The same code runs from src/ (tests) and
 * from the bundle in dist/, so the package root is found by walking up to the
 * directory that holds both package.json and policy/.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

export function packageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'policy'))) return (root = dir);
    const up = dirname(dir);
    if (up === dir) throw new Error('shadowcode package root not found');
    dir = up;
  }
}
