/*
 * Human output: aligned tables and colour, only where a person reads it.
 *
 *   stream.isTTY && NO_COLOR unset (or empty) ─► ANSI colour for states and errors
 *   otherwise (pipes, files, --json, NO_COLOR=1) ─► plain text, byte-identical
 *
 * Widths are measured without the colour codes, so coloured cells stay aligned.
 */
import type { Writable } from 'node:stream';
import { inert } from '../util/inert-text.js';

export interface Style {
  readonly colour: boolean;
  good(s: string): string;
  warn(s: string): string;
  bad(s: string): string;
  dim(s: string): string;
  bold(s: string): string;
  /** The colour for a state word: enabled, disabled, stale, refused, applied, … */
  state(s: string): string;
}

const wrap = (on: boolean, open: number, close: number) => (s: string) => (on && s ? `\u001b[${open}m${s}\u001b[${close}m` : s);

/** https://no-color.org: any non-empty NO_COLOR turns colour off. */
export function wantsColour(stream: Writable, env: NodeJS.ProcessEnv): boolean {
  return (stream as { isTTY?: boolean }).isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
}

export function style(colour: boolean): Style {
  const good = wrap(colour, 32, 39);
  const warn = wrap(colour, 33, 39);
  const bad = wrap(colour, 31, 39);
  const dim = wrap(colour, 2, 22);
  const bold = wrap(colour, 1, 22);
  const STATES: Record<string, (s: string) => string> = {
    enabled: good, applied: good, trusted: good, intact: good, succeeded: good,
    stale: warn, unchanged: dim, unknown: warn, pending: warn,
    refused: bad, failed: bad, broken: bad, denied: bad,
    disabled: dim,
  };
  return { colour, good, warn, bad, dim, bold, state: (s) => (STATES[s] ?? ((x: string) => x))(s) };
}

const ANSI = /\u001b\[[0-9;]*m/g;
/** The colour codes style() writes, and nothing else: bold, dim, red, green, yellow and their resets. */
const COLOUR_CODE = /^\u001b\[(?:1|2|22|31|32|33|39)m$/;
const width = (s: string) => [...s.replace(ANSI, '')].length;

/** `text` rendered by `render`, except, at a colour terminal, the colour codes style() writes. */
export function keepingColour(text: string, colour: boolean, render: (s: string) => string): string {
  if (!colour) return render(text);
  return text
    .split(/(\u001b\[[0-9;]*m)/)
    .map((part) => (COLOUR_CODE.test(part) ? part : render(part)))
    .join('');
}

/**
 * A cell can hold a model's, a server's or a file's text: its control, bidi and invisible
 * characters are shown escaped (`\x1b`, `\r`, `\u{202e}`: util/inert-text.ts), so it cannot
 * move the cursor, retitle the terminal or forge a line. Only at a colour terminal do the
 * colour codes style() writes pass as they are.
 */
export function printable(cell: string, colour = true): string {
  return keepingColour(cell, colour, inert);
}

/** A header row and aligned columns, two spaces apart; the last column is not padded. */
export function table(headers: readonly string[], rawRows: ReadonlyArray<readonly string[]>, st: Style): string {
  const rows = rawRows.map((r) => r.map((c) => printable(c, st.colour)));
  const widths = headers.map((h, i) => Math.max(width(h), ...rows.map((r) => width(r[i] ?? ''))));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c + ' '.repeat((widths[i] ?? 0) - width(c))))
      .join('  ')
      .trimEnd();
  return [st.bold(line(headers)), ...rows.map(line)].join('\n');
}
