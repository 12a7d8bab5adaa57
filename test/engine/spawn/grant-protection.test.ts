// A folder granted writable (`sandbox allow DIR --write`) outside the project gets the project's
// protection: a repository or a host config already in it is read-only inside the sandbox, and
// one a command creates there is named after it ends, like the project's own. A real bwrap, as the
// user running the suite.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { jobEvents } from '../../../src/engine/job-events.js';
import { openDb } from '../../../src/store/db.js';
import { cli, type Sandbox, sandbox } from '../../fixtures/env.js';

const ws = (sb: Sandbox) => ['--workspace', sb.project];

t.test("a writable grant's own .git and host configs stay read-only; a new one made there is named", async (t) => {
  const sb = sandbox('sc-grantprot');
  t.equal((await cli(sb, [...ws(sb), 'trust'])).code, 0);
  const sib = join(sb.root, 'sibling');
  mkdirSync(join(sib, '.git', 'hooks'), { recursive: true });
  writeFileSync(join(sib, '.git', 'config'), '[core]\n\tbare = false\n');
  mkdirSync(join(sib, 'pkg', '.vscode'), { recursive: true });
  writeFileSync(join(sib, 'pkg', '.vscode', 'tasks.json'), '{}');
  t.equal((await cli(sb, [...ws(sb), 'sandbox', 'allow', sib, '--write'])).code, 0);
  const script = [
    `echo kept > ${sib}/notes.txt && echo "@ wrote notes"`,
    `echo '[core]\n\thooksPath = /tmp/x' >> ${sib}/.git/config 2>/dev/null && echo "@ WROTE git config" || echo "@ git config read-only"`,
    `echo x > ${sib}/.git/hooks/pre-commit 2>/dev/null && echo "@ WROTE a hook" || echo "@ hooks read-only"`,
    `echo '{"x":1}' > ${sib}/pkg/.vscode/tasks.json 2>/dev/null && echo "@ WROTE tasks" || echo "@ host config read-only"`,
    `mv ${sib}/pkg ${sib}/pkg2 2>/dev/null && echo "@ MOVED pkg" || echo "@ pkg pinned"`,
    `mkdir -p ${sib}/vendored/.git && echo "[core]" > ${sib}/vendored/.git/config && echo "@ made a nested repository"`,
  ].join('; ');
  const r = await cli(sb, ['--json', ...ws(sb), 'test', '--yes', '--', 'sh', '-c', script]);
  const data = JSON.parse(r.stdout);
  const lines = (data.output_tail as string).split('\n').filter((l) => l.startsWith('@ ')).map((l) => l.slice(2));
  t.strictSame(lines, ['wrote notes', 'git config read-only', 'hooks read-only', 'host config read-only', 'pkg pinned', 'made a nested repository'], data.output_tail);
  t.equal(readFileSync(join(sib, 'notes.txt'), 'utf8'), 'kept\n', 'the grant is writable');
  t.equal(readFileSync(join(sib, '.git', 'config'), 'utf8'), '[core]\n\tbare = false\n', 'its git config is as it was');
  const db = openDb(sb.profile, 5000);
  t.teardown(() => db.close());
  const events = jobEvents(db, data.job.id, { limit: 100 }).items;
  const created = events.find((e) => e.kind === 'protected_created')?.body as { paths: string[]; notice: string } | undefined;
  t.same(created?.paths, [join(sib, 'vendored/.git')], 'the new repository in the granted folder is named by its full path');
});
