/*
 * Test commands a project declares, found from its root files. Each candidate is
 * a literal argv run in the project directory; nothing here runs anything.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestCandidate {
  readonly argv: readonly string[];
  readonly source: string;
}

const NPM_DEFAULT_TEST = /no test specified/;

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').slice(0, 262144);
  } catch {
    return undefined;
  }
}

export function detectTestCommands(project: string): TestCandidate[] {
  const out: TestCandidate[] = [];
  const pkg = read(join(project, 'package.json'));
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
  const pyproject = read(join(project, 'pyproject.toml'));
  const setupCfg = read(join(project, 'setup.cfg'));
  if (existsSync(join(project, 'pytest.ini')) || (pyproject && /\[tool\.pytest/.test(pyproject)) || (setupCfg && /\[tool:pytest\]/.test(setupCfg)) || existsSync(join(project, 'conftest.py'))) {
    out.push({ argv: ['python3', '-m', 'pytest'], source: 'pytest configuration' });
  }
  const makefile = read(join(project, 'Makefile'));
  if (makefile && /^test\s*:/m.test(makefile)) out.push({ argv: ['make', 'test'], source: 'Makefile test target' });
  if (existsSync(join(project, 'pom.xml'))) out.push({ argv: ['mvn', 'test'], source: 'pom.xml' });
  if (existsSync(join(project, 'gradlew'))) out.push({ argv: ['./gradlew', 'test'], source: 'gradlew' });
  return out;
}
