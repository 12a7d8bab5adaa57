import t from 'tap';
import { unifiedDiff } from '../../src/engine/diff.js';

t.test('equal texts have no diff', async (t) => {
  t.equal(unifiedDiff('a\n', 'a\n', 'x', 'y'), '');
});

t.test('hunks carry three lines of context and deletions come before insertions', async (t) => {
  const a = 'a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n';
  const b = 'a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nK\nl\n';
  t.equal(unifiedDiff(a, b, 'a/f', 'b/f'), '--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n@@ -8,5 +8,5 @@\n h\n i\n j\n-k\n+K\n l\n');
});

t.test('a new file diffs against nothing, and huge inputs are summarised instead of compared', async (t) => {
  t.equal(unifiedDiff('', 'x\ny\n', '/dev/null', 'b/n'), '--- /dev/null\n+++ b/n\n@@ -1,0 +1,2 @@\n+x\n+y\n');
  t.match(unifiedDiff('a\n'.repeat(3000), 'b\n'.repeat(3000), 'a', 'b', 1000), /too large to diff here/);
});
