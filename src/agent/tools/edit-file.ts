/*
 * edit_file: an exact old → new replacement.
 *
 *   current file (bounded read) ─► count exact occurrences of old_text
 *     1 (or ≥1 with replace_all) ─► new content ─► checkpointed write
 *     0 ─► tool error with the closest region, numbered, so the model can retry
 *     >1 ─► tool error listing where, asking for more context or replace_all
 *
 * Matching stays exact, as weaker models that get a fuzzy match silently
 * rewrite the wrong place; instead the miss says what is really there. When
 * old_text carries read_file's "N<tab>" prefixes, the error says so.
 */
import { ScError } from '../../errors.js';
import { readState } from '../../engine/files.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { guardPath, writeProjectFile } from './change.js';
import { fail, type NativeTool, ok, type ToolEnv } from './types.js';

interface Args {
  path: string;
  old_text: string;
  new_text: string;
  replace_all?: boolean;
}

const CONTEXT = 3;

function occurrences(text: string, needle: string): number[] {
  const at: number[] = [];
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) at.push(i);
  return at;
}

function lineOf(text: string, offset: number): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

function bigrams(s: string): Map<string, number> {
  const m = new Map<string, number>();
  for (let i = 0; i < s.length - 1; i++) m.set(s.slice(i, i + 2), (m.get(s.slice(i, i + 2)) ?? 0) + 1);
  return m;
}

/** Dice similarity of two trimmed lines, 0..1. */
function similar(a: string, b: string): number {
  if (a === b) return 1;
  if (a.length < 2 || b.length < 2) return 0;
  const x = bigrams(a);
  let common = 0;
  for (const [k, n] of bigrams(b)) common += Math.min(n, x.get(k) ?? 0);
  return (2 * common) / (a.length + b.length - 2);
}

/** The 1-based first line of the window of the file that best matches old_text's lines. */
export function closestStart(fileLines: readonly string[], oldLines: readonly string[]): { start: number; score: number } {
  const want = oldLines.map((l) => l.trim());
  const index = new Map<string, number[]>();
  fileLines.forEach((l, i) => {
    const k = l.trim();
    if (k) index.set(k, [...(index.get(k) ?? []), i]);
  });
  // Each exactly-equal (trimmed) line votes for where the window would start.
  const votes = new Map<number, number>();
  want.forEach((w, j) => {
    if (!w) return;
    for (const i of (index.get(w) ?? []).slice(0, 64)) votes.set(i - j, (votes.get(i - j) ?? 0) + 1);
  });
  let best = { start: 1, score: 0 };
  for (const [s, v] of votes) if (v > best.score || (v === best.score && s + 1 < best.start)) best = { start: Math.max(1, s + 1), score: v };
  if (best.score > 0) return best;
  // No line is equal: the file line most like the first non-empty old line.
  const first = want.find((w) => w) ?? '';
  const j = want.indexOf(first);
  let top = 0;
  fileLines.forEach((l, i) => {
    const s = similar(l.trim(), first);
    if (s > top) {
      top = s;
      best = { start: Math.max(1, i - j + 1), score: s };
    }
  });
  return best;
}

function numbered(lines: readonly string[], from: number, to: number): string {
  const out: string[] = [];
  for (let n = Math.max(1, from); n <= Math.min(lines.length, to); n++) out.push(`${n}\t${lines[n - 1]}`);
  return out.join('\n');
}

export const editFile: NativeTool<Args> = {
  name: 'edit_file',
  writes: true,
  describe: (a) => ({ path: a.path, replace_all: a.replace_all === true }),
  async run(env: ToolEnv, a: Args, ticket: GateTicket) {
    assertTicket(ticket, 'task:tool.edit_file');
    // Before the file is read: a refused path shows nothing of itself, not even a closest region.
    guardPath(env, a.path, 'write');
    const state = readState(env.ctx.project, a.path, env.policy.limits.agent.write_bytes);
    if (!state.exists || !state.content) throw new ScError('SC_FILE_NOT_FOUND', `${a.path} does not exist in the project; create it with write_file`);
    const text = state.content.toString('utf8');
    if (a.old_text === a.new_text) return fail('SC_TOOL_ARGS_INVALID', 'old_text and new_text are the same; nothing to change');
    const at = occurrences(text, a.old_text);
    if (at.length === 0) {
      const fileLines = text.split('\n');
      const oldLines = a.old_text.split('\n');
      const prefixed = oldLines.every((l) => /^\s*\d+\t/.test(l));
      const { start, score } = closestStart(fileLines, oldLines);
      const region = numbered(fileLines, start - CONTEXT, start + oldLines.length - 1 + CONTEXT);
      const hint = prefixed ? ' old_text starts each line with a line number and a tab, as read_file shows them; those prefixes are not in the file.' : '';
      const where = score > 0 ? `The closest region is lines ${start}-${Math.min(fileLines.length, start + oldLines.length - 1)}:` : 'Nothing in the file resembles it; the start of the file is:';
      return fail('SC_EDIT_NO_MATCH', `old_text was not found in ${a.path}.${hint} ${where}\n${region}\nCopy the exact text (without the line-number prefixes) and retry, or rewrite the file with write_file.`);
    }
    if (at.length > 1 && a.replace_all !== true) {
      const lines = at.slice(0, 20).map((o) => lineOf(text, o));
      return fail('SC_EDIT_AMBIGUOUS', `old_text occurs ${at.length} times in ${a.path} (at lines ${lines.join(', ')}${at.length > 20 ? ', …' : ''}); include more surrounding lines so it matches once, or set replace_all`);
    }
    const next = a.replace_all === true ? text.split(a.old_text).join(a.new_text) : text.slice(0, at[0]) + a.new_text + text.slice((at[0] as number) + a.old_text.length);
    const r = await writeProjectFile(env, 'edit_file', a.path, Buffer.from(next, 'utf8'), false);
    const first = lineOf(next, at[0] as number);
    const shown = numbered(next.split('\n'), first - CONTEXT, first + a.new_text.split('\n').length - 1 + CONTEXT);
    return ok(`Edited ${r.path}: ${at.length} replacement${at.length === 1 ? '' : 's'}. Lines around the ${at.length === 1 ? 'change' : 'first change'} now:\n${shown}`);
  },
};
