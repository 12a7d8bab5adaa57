/*
 * Test commands a project declares, found from its root files. Each candidate is
 * a literal argv run in the project directory; nothing here runs anything.
 *
 * Manifests are read through the bounded primitive (src/util/safe-read.ts): a
 * FIFO, device, outside link or oversized manifest declares nothing and is
 * reported in `refused`, so a caller can say why instead of guessing.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ScError } from '../errors.js';
import { tryReadProjectFile } from '../util/safe-read.js';

export interface TestCandidate {
  readonly argv: readonly string[];
  readonly source: string;
}

/** A project file that was not read, and why (a stable code). */
export interface RefusedFile {
  readonly path: string;
  readonly code: string;
  readonly message: string;
}

const NPM_DEFAULT_TEST = /no test specified/;

/** Reads a project manifest within its cap; a refusal is recorded and reads as absent. */
export function readManifest(project: string, rel: string, cap: number, refused: RefusedFile[]): string | undefined {
  try {
    return tryReadProjectFile(project, rel, { cap, kind: 'manifest' })?.bytes.toString('utf8');
  } catch (err) {
    if (!(err instanceof ScError)) throw err;
    if (!refused.some((r) => r.path === rel)) refused.push({ path: rel, code: err.code, message: err.message });
    return undefined;
  }
}

export function detectTestCommands(project: string, limits: { manifest_bytes: number }, refused: RefusedFile[] = []): TestCandidate[] {
  const out: TestCandidate[] = [];
  const read = (rel: string) => readManifest(project, rel, limits.manifest_bytes, refused);
  const pkg = read('package.json');
  if (pkg) {
    try {
      const test = (JSON.parse(pkg) as { scripts?: Record<string, unknown> }).scripts?.test;
      if (typeof test === 'string' && test.trim() && !NPM_DEFAULT_TEST.test(test)) out.push({ argv: ['npm', 'test'], source: 'package.json scripts.test' });
    } catch {
      /* an unparsable package.json declares nothing */
    }
  }
  if (existsSync(join(project, 'Cargo.toml'))) out.push({ argv: ['cargo', 'test'], source: 'Cargo.toml' });
  if (existsSync(join(project, 'go.mod'))) out.push({ argv: ['go', 'test', './...'], source: 'go.mod' });
  const pyproject = read('pyproject.toml');
  const setupCfg = read('setup.cfg');
  if (existsSync(join(project, 'pytest.ini')) || (pyproject && /\[tool\.pytest/.test(pyproject)) || (setupCfg && /\[tool:pytest\]/.test(setupCfg)) || existsSync(join(project, 'conftest.py'))) {
    out.push({ argv: ['python3', '-m', 'pytest'], source: 'pytest configuration' });
  }
  const makefile = read('Makefile');
  if (makefile && /^test\s*:/m.test(makefile)) out.push({ argv: ['make', 'test'], source: 'Makefile test target' });
  if (existsSync(join(project, 'pom.xml'))) out.push({ argv: ['mvn', 'test'], source: 'pom.xml' });
  if (existsSync(join(project, 'gradlew'))) out.push({ argv: ['./gradlew', 'test'], source: 'gradlew' });
  return out;
}

/** The one test command of a project, or a clear error: a refused manifest is named rather than guessed around. */
export function singleTestCommand(project: string, limits: { manifest_bytes: number }): TestCandidate {
  const refused: RefusedFile[] = [];
  const found = detectTestCommands(project, limits, refused);
  const first = refused[0];
  if (first) {
    throw new ScError(first.code as 'SC_FILE_REFUSED', `cannot detect the test command: ${first.message}; pass the command to run`, { path: first.path, refused });
  }
  if (found.length !== 1) {
    throw new ScError(
      'SC_TEST_COMMAND_UNKNOWN',
      found.length === 0 ? 'no test command was detected in this project; pass the command to run' : `several test commands were detected (${found.map((c) => c.argv.join(' ')).join('; ')}); pass the command to choose one`,
      { candidates: found.map((c) => ({ argv: [...c.argv], source: c.source })) },
    );
  }
  return found[0] as TestCandidate;
}
