/*
 * "Did you mean …?" for commands, subcommands and options.
 *
 *   typed word ─► optimal-string-alignment distance to each candidate
 *              ─► the single nearest within a third of its length (at least 1, at most 3)
 *
 * Candidates always come from the command table and the option specs, so a
 * command added there gets suggestions without any change here. A transposition
 * (`stauts`) counts as one edit, as it is the commonest typing slip.
 */

export function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i] as number[];
      const up = d[i - 1] as number[];
      row[j] = Math.min(up[j]! + 1, row[j - 1]! + 1, up[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, (d[i - 2] as number[])[j - 2]! + 1);
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

/** The nearest candidate, or undefined when none is close enough to be a slip (ties go to the first listed). */
export function nearest(typed: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = Infinity;
  for (const c of candidates) {
    if (c === typed) continue;
    const score = distance(typed.toLowerCase(), c.toLowerCase());
    const allowed = Math.min(3, Math.max(1, Math.floor(Math.max(typed.length, c.length) / 3)));
    if (score <= allowed && score < bestScore) {
      best = c;
      bestScore = score;
    }
  }
  return best;
}

/** "; did you mean X?" for a name that was not found, or "" when nothing is close. */
export function didYouMean(typed: string, candidates: readonly string[]): string {
  const s = nearest(typed, candidates);
  return s === undefined ? '' : `; did you mean ${s}?`;
}
