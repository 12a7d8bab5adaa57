/*
 * A unified diff of two texts, by longest common subsequence over lines, with
 * three lines of context, deletions before insertions. Bounded: past maxCells of comparison it reports that
 * the files differ instead of spending unbounded time.
 */
export function unifiedDiff(a: string, b: string, nameA: string, nameB: string, maxCells = 4_000_000): string {
  if (a === b) return '';
  const lines = (s: string) => {
    const l = s.split('\n');
    if (l[l.length - 1] === '') l.pop();
    return l;
  };
  const x = lines(a);
  const y = lines(b);
  if (x.length * y.length > maxCells) return `--- ${nameA}\n+++ ${nameB}\n@@ files differ (${x.length} and ${y.length} lines; too large to diff here) @@\n`;
  const n = x.length;
  const m = y.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i]![j] = x[i] === y[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const ops: Array<[' ' | '-' | '+', string, number, number]> = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) ops.push([' ', x[i++] as string, i, j + 1]), j++;
    else if (i < n && (j >= m || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) ops.push(['-', x[i++] as string, i, j]);
    else ops.push(['+', y[j++] as string, i, j]);
  }
  const out = [`--- ${nameA}`, `+++ ${nameB}`];
  const changed = ops.map((o, k) => (o[0] !== ' ' ? k : -1)).filter((k) => k >= 0);
  let k = 0;
  while (k < changed.length) {
    const start = Math.max(0, (changed[k] as number) - 3);
    let end = Math.min(ops.length, (changed[k] as number) + 4);
    while (k + 1 < changed.length && (changed[k + 1] as number) - 3 <= end) end = Math.min(ops.length, (changed[++k] as number) + 4);
    k++;
    const hunk = ops.slice(start, end);
    const aStart = ops.slice(0, start).filter((o) => o[0] !== '+').length + 1;
    const bStart = ops.slice(0, start).filter((o) => o[0] !== '-').length + 1;
    out.push(`@@ -${aStart},${hunk.filter((o) => o[0] !== '+').length} +${bStart},${hunk.filter((o) => o[0] !== '-').length} @@`);
    for (const o of hunk) out.push(`${o[0]}${o[1]}`);
  }
  return `${out.join('\n')}\n`;
}
