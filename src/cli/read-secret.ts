/*
 * Reads a secret value without it ever touching argv: from a hidden terminal
 * prompt when stdin is a TTY, otherwise from stdin up to a byte cap (one
 * trailing newline is dropped, so `printf 'x\n' | …` and `echo x | …` agree).
 */
import { ScError } from '../errors.js';
import type { Io } from './context.js';

export async function readSecretValue(io: Io, name: string, maxBytes: number): Promise<string> {
  return io.stdin.isTTY ? prompt(io, name, maxBytes) : readPiped(io, maxBytes);
}

async function readPiped(io: Io, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of io.stdin) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    // One byte of slack for the trailing newline that is dropped below.
    if (size > maxBytes + 2) throw new ScError('SC_SECRET_VALUE_INVALID', `secret value is larger than ${maxBytes} bytes`);
    chunks.push(buf);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text.endsWith('\r\n') ? text.slice(0, -2) : text.endsWith('\n') ? text.slice(0, -1) : text;
}

function prompt(io: Io, name: string, maxBytes: number): Promise<string> {
  const { stdin, stderr } = io;
  if (typeof stdin.setRawMode !== 'function') throw new ScError('SC_SECRET_NO_INPUT', 'cannot read a hidden value from this terminal; pipe it on stdin instead');
  // Raw mode before the prompt: anything typed after the prompt appears must not echo.
  stdin.setRawMode(true);
  stdin.resume();
  stderr.write(`Value for ${name} (input hidden): `);
  return new Promise((resolve, reject) => {
    let value = '';
    const done = (err?: ScError) => {
      stdin.setRawMode?.(false);
      stdin.pause();
      stdin.off('data', onData);
      stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk: Buffer | string) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003' || ch === '\u0004') return done(new ScError('SC_SECRET_NO_INPUT', 'cancelled; nothing was stored'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
        if (Buffer.byteLength(value) > maxBytes) return done(new ScError('SC_SECRET_VALUE_INVALID', `secret value is larger than ${maxBytes} bytes`));
      }
    };
    stdin.on('data', onData);
  });
}
