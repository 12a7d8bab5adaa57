/*
 * Where a JSON text first goes wrong, for an error a person can act on.
 *
 *   JSON.parse failed ─► scan the text once (RFC 8259 grammar) ─► offset + what was expected
 *
 * V8's own messages differ between Node versions and often omit the position,
 * so the position comes from this scan. Nesting is walked with an explicit stack:
 * a hostile file of deep brackets cannot overflow the call stack.
 */

export interface JsonProblem {
  readonly offset: number;
  readonly message: string;
}

export function jsonProblem(text: string): JsonProblem | undefined {
  let i = 0;
  const fail = (message: string): JsonProblem => ({ offset: i, message: i >= text.length ? `unexpected end of input; ${message}` : `${message}, found ${JSON.stringify(text[i])}` });
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const string = (): JsonProblem | undefined => {
    i++;
    while (i < text.length) {
      const c = text[i] as string;
      if (c === '"') {
        i++;
        return undefined;
      }
      if (c < ' ') return fail('a control character must be escaped in a string');
      if (c === '\\') {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return (i++, fail('expected four hex digits after \\u'));
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else return (i++, fail('expected a valid escape'));
      } else i++;
    }
    return fail('expected the closing quote of a string');
  };
  const scalar = (): JsonProblem | undefined => {
    const rest = text.slice(i);
    const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(rest) ?? /^(true|false|null)/.exec(rest);
    if (!m || m[0] === '' || m[0] === '-') return fail('expected a value');
    i += m[0].length;
    return undefined;
  };
  // Each stack entry is the container being filled: '{' or '['.
  const stack: string[] = [];
  ws();
  for (;;) {
    // A value is expected here.
    ws();
    const c = text[i];
    if (c === '{' || c === '[') {
      stack.push(c);
      i++;
      ws();
      if (text[i] === (c === '{' ? '}' : ']')) {
        i++;
        stack.pop();
      } else if (c === '{') {
        if (text[i] !== '"') return fail('expected a property name in double quotes');
        const p = string();
        if (p) return p;
        ws();
        if (text[i] !== ':') return fail("expected ':' after a property name");
        i++;
        continue;
      } else continue;
    } else if (c === '"') {
      const p = string();
      if (p) return p;
    } else {
      const p = scalar();
      if (p) return p;
    }
    // After a value: close containers or move to the next member.
    for (;;) {
      ws();
      const top = stack[stack.length - 1];
      if (top === undefined) {
        return i < text.length ? fail('expected the end of the text after the value') : undefined;
      }
      const close = top === '{' ? '}' : ']';
      if (text[i] === close) {
        i++;
        stack.pop();
        continue;
      }
      if (text[i] !== ',') return fail(`expected ',' or '${close}'`);
      i++;
      ws();
      if (top === '{') {
        if (text[i] !== '"') return fail(text[i] === '}' ? 'a trailing comma is not allowed' : 'expected a property name in double quotes');
        const p = string();
        if (p) return p;
        ws();
        if (text[i] !== ':') return fail("expected ':' after a property name");
        i++;
      } else if (text[i] === ']') return fail('a trailing comma is not allowed');
      break;
    }
  }
}
