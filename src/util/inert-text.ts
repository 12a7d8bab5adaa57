/*
 * Untrusted text made inert for a person to read: what a model, a file, a command or a
 * server wrote cannot move the cursor, erase a line, retitle the terminal, reorder what
 * follows it or hide a character. Each such character is shown as a visible escape.
 *
 *   text ─► every character that is not plainly visible ─► its escape
 *     \t \n \r                     (inertBlock keeps \n and \t: the lines it was meant to have)
 *     \xHH      other C0 controls, ESC (\x1b), backspace (\x08), DEL (\x7f), C1 (\x80-\x9f),
 *               the soft hyphen (\xad)
 *     \u{HHHH}  bidi embeddings, overrides, isolates and marks; zero-width and other invisible
 *               format characters (ZWSP, ZWNJ, ZWJ, word joiner, BOM, tags, …); the line and
 *               paragraph separators; Hangul fillers; variation selectors (one after a
 *               non-ASCII character, an emoji's, stays); a lone UTF-16 surrogate
 *
 *   inert(s)      one line (a file name, an argv word, a server's name): nothing breaks the line
 *   inertBlock(s) lines (a diff, a model's answer, a command's output)
 *   inertJson(s)  JSON text: the same characters as JSON's own \uHHHH escapes, so it parses
 *                 to exactly the same values (JSON.stringify leaves bidi, C1 and U+2028 raw)
 *   inertParts(s) the pieces, each marked escape or not, for a page that shows escapes apart
 *
 * The categories, not a list: \p{Cc} (controls), \p{Cf} (format: bidi, zero-width, soft
 * hyphen, tags), \p{Zl} \p{Zp} (separators), \p{Cs} (a lone surrogate). A backslash is left
 * as it is, so `\x1b` in a file name reads the same as an escaped ESC: either way nothing moves.
 * No imports: the console page bundles this for the browser.
 */

const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u115f\u1160\u3164\uffa0\ufe00-\ufe0f\u{e0100}-\u{e01ef}]/gu;

/** Text presentation (U+FE0E) and emoji presentation (U+FE0F) after a non-ASCII character: part of an emoji, visible. */
function emojiSelector(c: string, at: number, whole: string): boolean {
  return (c === '\ufe0e' || c === '\ufe0f') && at > 0 && whole.charCodeAt(at - 1) > 0x7f;
}

function escapeOf(c: string): string {
  const cp = c.codePointAt(0) as number;
  if (cp === 0x09) return '\\t';
  if (cp === 0x0a) return '\\n';
  if (cp === 0x0d) return '\\r';
  if (cp <= 0xff) return `\\x${cp.toString(16).padStart(2, '0')}`;
  return `\\u{${cp.toString(16).padStart(4, '0')}}`;
}

function render(text: string, keep: (c: string) => boolean, esc: (c: string) => string): string {
  return text.replace(UNSAFE, (c, at: number, whole: string) => (keep(c) || emojiSelector(c, at, whole) ? c : esc(c)));
}

const nothing = () => false;
const lineBreaks = (c: string) => c === '\n' || c === '\t';

/** One line of untrusted text: every control, line break and invisible character shown as an escape. */
export function inert(text: string): string {
  return render(String(text), nothing, escapeOf);
}

/** Lines of untrusted text: newlines and tabs stay, every other control and invisible character is shown as an escape. */
export function inertBlock(text: string): string {
  return render(String(text), lineBreaks, escapeOf);
}

/**
 * JSON text (one document or JSON lines): each unsafe character as JSON's \uHHHH escape. Inside a
 * string that is the same value; outside one such a character is not JSON, and is shown all the same.
 */
export function inertJson(json: string): string {
  return render(json, lineBreaks, (c) => {
    let out = '';
    for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
    return out;
  });
}

/** The pieces of inertBlock (block) or inert: plain text and escapes apart, in order. */
export function inertParts(text: string, block: boolean): Array<{ text: string; escape: boolean }> {
  const s = String(text);
  const parts: Array<{ text: string; escape: boolean }> = [];
  let last = 0;
  for (const m of s.matchAll(UNSAFE)) {
    const c = m[0];
    const at = m.index as number;
    if ((block && lineBreaks(c)) || emojiSelector(c, at, s)) continue;
    if (at > last) parts.push({ text: s.slice(last, at), escape: false });
    parts.push({ text: escapeOf(c), escape: true });
    last = at + c.length;
  }
  if (last < s.length) parts.push({ text: s.slice(last), escape: false });
  return parts;
}
