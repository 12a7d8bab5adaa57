/*
 * The one renderer: a command's data as JSON with --json, its text otherwise;
 * errors as one line on stderr, or as {"error":{…}} on stdout with --json.
 */
import type { Writable } from 'node:stream';
import type { ScError } from '../errors.js';
import { scrubText } from '../policy/redact.js';
import type { Output } from './spec.js';
import { style, wantsColour } from './style.js';

export function renderOutput(out: Output, json: boolean, stdout: Writable): void {
  if (json && out.streamed) return;
  const text = json ? `${JSON.stringify(out.data, null, 2)}\n` : out.text.endsWith('\n') || out.text === '' ? out.text : `${out.text}\n`;
  stdout.write(scrubText(text));
}

export function renderError(err: ScError, json: boolean, stdout: Writable, stderr: Writable, env: NodeJS.ProcessEnv = {}): void {
  if (json) stdout.write(`${scrubText(JSON.stringify(err.toJSON(), null, 2))}\n`);
  else {
    const st = style(wantsColour(stderr, env));
    stderr.write(`${st.bad('shadowcode:')} ${scrubText(err.message)} ${st.bad(`[${err.code}]`)}\n`);
  }
}
