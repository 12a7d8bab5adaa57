// makeDirs: mkdir -p that always returns, even where Node's recursive mkdir spins.
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { makeDirs } from '../../src/util/make-dirs.js';
import { sandbox } from '../fixtures/env.js';

t.test('makes every missing part, with the mode asked for, and accepts what exists', async (t) => {
  const sb = sandbox('mkd');
  const deep = join(sb.root, 'a', 'b', 'c');
  makeDirs(deep, 0o700);
  t.ok(statSync(deep).isDirectory());
  for (const d of [join(sb.root, 'a'), join(sb.root, 'a', 'b'), deep]) t.equal(statSync(d).mode & 0o777, 0o700, `${d} is 0700`);
  t.doesNotThrow(() => makeDirs(deep), 'an existing directory is fine');
  mkdirSync(join(sb.root, 'x'));
  makeDirs(join(sb.root, 'x', 'y'));
  t.ok(statSync(join(sb.root, 'x', 'y')).isDirectory(), 'below an existing one');
});

t.test('throws where a part cannot be made, instead of retrying for ever', async (t) => {
  const sb = sandbox('mkd');
  writeFileSync(join(sb.root, 'file'), 'x');
  t.throws(() => makeDirs(join(sb.root, 'file', 'sub')), { code: 'ENOTDIR' }, 'a file in the way');
  // Node 20's mkdirSync(…, { recursive: true }) never returns for this path.
  t.throws(() => makeDirs(`/proc/${process.pid}/sc-not-here/x`), { code: 'ENOENT' }, 'below /proc');
});
