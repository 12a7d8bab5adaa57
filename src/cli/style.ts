/*
 * Human output: aligned tables and colour, only where a person reads it.
 *
 *   stream.isTTY && NO_COLOR unset (or empty) ─► ANSI colour for states and errors
 *   otherwise (pipes, files, --json, NO_COLOR=1) ─► plain text, byte-identical
 *
 * Widths are measured without the colour codes, so coloured cells stay aligned.
 */
import type { Writable } from 'node:stream';

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
const COLOUR_CODE = /^\u001b\[(?:1|2|22|31|32|33|39)m$/;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const width = (s: string) => [...s.replace(ANSI, '')].length;

/**
 * A cell can hold a model's, a server's or a file's text: its control characters
 * are shown escaped (`\u001b`), so it cannot move the cursor, retitle the terminal
 * or forge a line. Only the colour codes style() writes pass as they are.
 */
export function printable(cell: string): string {
  return cell
    .split(/(\u001b\[[0-9;]*m)/)
    .map((part) => (COLOUR_CODE.test(part) ? part : part.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)))
    .join('');
}

/** A header row and aligned columns, two spaces apart; the last column is not padded. */
export function table(headers: readonly string[], rawRows: ReadonlyArray<readonly string[]>, st: Style): string {
  const rows = rawRows.map((r) => r.map(printable));
  const widths = headers.map((h, i) => Math.max(width(h), ...rows.map((r) => width(r[i] ?? ''))));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c + ' '.repeat((widths[i] ?? 0) - width(c))))
      .join('  ')
      .trimEnd();
  return [st.bold(line(headers)), ...rows.map(line)].join('\n');
}
