import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { detectTestCommands } from '../../src/engine/detect-tests.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { sandbox } from '../fixtures/env.js';

t.test('each ecosystem declares its own test command', async (t) => {
  const cases: Array<[Record<string, string>, string[]]> = [
    [{ 'package.json': '{"scripts":{"test":"tap"}}' }, ['npm test']],
    [{ 'package.json': '{"scripts":{"test":"echo \\"Error: no test specified\\" && exit 1"}}' }, []],
    [{ 'package.json': '{not json' }, []],
    [{ 'Cargo.toml': '[package]' }, ['cargo test']],
    [{ 'go.mod': 'module x' }, ['go test ./...']],
    [{ 'pyproject.toml': '[tool.pytest.ini_options]\n' }, ['python3 -m pytest']],
    [{ 'pyproject.toml': '[project]\nname="x"\n' }, []],
    [{ Makefile: 'build:\n\tcc x.c\ntest: build\n\t./run\n' }, ['make test']],
    [{ Makefile: 'build:\n\tcc x.c\n' }, []],
    [{ 'package.json': '{"scripts":{"test":"vitest"}}', 'Cargo.toml': '' }, ['npm test', 'cargo test']],
  ];
  for (const [files, want] of cases) {
    const sb = sandbox();
    for (const [f, text] of Object.entries(files)) writeFileSync(join(sb.project, f), text);
    t.same(detectTestCommands(sb.project, shippedPolicy().limits.files).map((c) => c.argv.join(' ')), want, Object.keys(files).join('+'));
  }
});
