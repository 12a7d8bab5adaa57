/*
 * The last stop before a person's terminal: every write of the CLI to stdout and stderr goes
 * through here, so text a command forgot to render (a new command, a new approval detail)
 * still cannot move the cursor, erase a line or hide a character.
 *
 *   main(argv, io) ─► guardIo(io) ─► every command, prompt, event line and error writes to it
 *     stdout with --json ─► inertJson: unsafe characters as JSON \uHHHH escapes (same values)
 *     otherwise          ─► inertBlock: newlines and tabs stay, every other control is shown
 *                           escaped; at a colour terminal the colour codes style.ts writes pass
 *   rawStream(s) ─► the stream underneath, for bytes a program reads (mcp serve's protocol)
 *                   and for our own cursor control (eraseLine)
 *
 * Fields are rendered where they are written (inert() in output.ts, style.ts, the commands),
 * because only there is a newline in a file name known to be a forgery; this net cannot tell.
 * Colour codes are recognised by their bytes: from a forgotten field one of those few
 * (bold, dim, red, green, yellow, reset) could pass at a colour terminal; nothing that moves,
 * erases or conceals does.
 */
import { StringDecoder } from 'node:string_decoder';
import type { Writable } from 'node:stream';
import { inertBlock, inertJson } from '../util/inert-text.js';
import type { Io } from './context.js';
import { keepingColour, wantsColour } from './style.js';

const RAW = Symbol('shadowcode.terminal.raw');

function guard(stream: Writable, render: (text: string) => string): Writable {
  if ((stream as { [RAW]?: Writable })[RAW]) return stream;
  const decoder = new StringDecoder('utf8');
  const text = (chunk: unknown): unknown => {
    if (typeof chunk === 'string') return render(chunk);
    if (chunk instanceof Uint8Array) return render(decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)));
    return chunk;
  };
  const call = (f: Function, args: unknown[]) => f.apply(stream, args);
  return new Proxy(stream, {
    get(target, prop) {
      if (prop === RAW) return target;
      // A chunk's encoding names how a string is encoded; the rendered text is always a string.
      if (prop === 'write') return (chunk: unknown, ...rest: unknown[]) => call(target.write, [text(chunk), ...(typeof chunk === 'string' ? rest : rest.filter((r) => typeof r === 'function'))]);
      if (prop === 'end') return (chunk?: unknown, ...rest: unknown[]) => call(target.end, chunk === undefined || typeof chunk === 'function' ? [chunk, ...rest] : [text(chunk), ...rest]);
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/**
 * The CLI's streams, guarded. `json()` is asked at each write: --json is known only once the
 * global options are parsed, and an error before that is still written.
 */
export function guardIo(io: Io, json: () => boolean): Io {
  const outColour = wantsColour(io.stdout, io.env);
  const errColour = wantsColour(io.stderr, io.env);
  return {
    ...io,
    stdout: guard(io.stdout, (s) => (json() ? inertJson(s) : keepingColour(s, outColour, inertBlock))),
    stderr: guard(io.stderr, (s) => keepingColour(s, errColour, inertBlock)),
  };
}

/** The stream under a guard (or the stream itself): for a program's bytes and our own cursor control only. */
export function rawStream(stream: Writable): Writable {
  return (stream as { [RAW]?: Writable })[RAW] ?? stream;
}

/** Back to the start of the line and clear it: the status line of `run`, redrawn. */
export function eraseLine(stream: Writable): void {
  rawStream(stream).write('\r\u001b[2K');
}
