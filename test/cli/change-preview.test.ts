// What a y/N prompt of shadowcode run shows for a coding CLI's action: a file
// change as its diff, any other tool by name with its exact input.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { claudeApproval } from '../../src/agent/runners/claude.js';
import { changePreview } from '../../src/cli/change-preview.js';
import { describeAction } from '../../src/cli/output.js';
import { sandbox } from '../fixtures/env.js';

t.test('a Claude Code Write shows the diff from the file as it is now', async (t) => {
  const sb = sandbox('preview');
  writeFileSync(join(sb.project, 'greet.js'), 'export const greet = () => "hi";\n');
  const { kind, action } = claudeApproval(sb.project, 'Write', { file_path: join(sb.project, 'greet.js'), content: 'export const greet = () => "hello, world";\n' });
  t.equal(kind, 'write');
  t.equal(describeAction(kind, action), 'write greet.js');
  t.match(changePreview(sb.project, action, 4096), /^--- a\/greet\.js\n\+\+\+ b\/greet\.js\n@@.*\n-export const greet = \(\) => "hi";\n\+export const greet = \(\) => "hello, world";\n/);
});

t.test('a Write of a new file diffs against /dev/null; an Edit shows old and new text; a long change is cut and says so', async (t) => {
  const sb = sandbox('preview');
  const created = claudeApproval(sb.project, 'Write', { file_path: 'new.txt', content: 'fresh\n' });
  t.match(changePreview(sb.project, created.action, 4096), /^--- \/dev\/null\n\+\+\+ b\/new\.txt\n@@.*\n\+fresh\n/);
  const edited = claudeApproval(sb.project, 'Edit', { file_path: 'a.js', old_string: 'let x = 1;', new_string: 'const x = 1;' });
  t.match(changePreview(sb.project, edited.action, 4096), /-let x = 1;\n\+const x = 1;/);
  const big = claudeApproval(sb.project, 'Write', { file_path: 'big.txt', content: 'line\n'.repeat(5000) });
  t.match(changePreview(sb.project, big.action, 1000), /\n… \d+ more characters of the change not shown\n$/);
});

t.test('a Claude Code Read is named as that tool with its input, not as a command with no argv', async (t) => {
  const sb = sandbox('preview');
  const { kind, action } = claudeApproval(sb.project, 'Read', { file_path: join(sb.project, 'a.txt') });
  const text = describeAction(kind, action);
  t.equal(text, `use its Read tool with ${JSON.stringify({ file_path: join(sb.project, 'a.txt') })}`);
  t.notMatch(text, /undefined/);
  t.equal(describeAction('command', { argv: ['npm', 'test'], cwd: '/p' }), 'run ["npm","test"] in /p');
});
