/*
 * Parsing throughput of a model's answer stream (bundled and run by
 * bench/stream.mjs; not a test, no assertions). No network: the bytes are cut
 * into pieces and pushed straight into the readers, so only parsing is timed.
 *
 *   shape ─► bytes ─► pieces of N bytes ─► SseReader ─► ChatAccumulator | MessagesAccumulator ─► Turn
 *   reported: CPU-seconds and MB/s per shape; linear parsing keeps MB/s flat
 *   as the hostile shapes (one huge line, hundreds of thousands of ids) grow
 */
import { MessagesAccumulator } from '../src/agent/providers/anthropic.js';
import { ChatAccumulator } from '../src/agent/providers/openai.js';
import { SseReader } from '../src/agent/providers/sse.js';

const MIB = 1024 * 1024;
const chunk = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
const openaiEnd = chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) + 'data: [DONE]\n\n';

function longLine(mib: number): string {
  return chunk({ choices: [{ index: 0, delta: { content: 'x'.repeat(mib * MIB) }, finish_reason: null }] }) + openaiEnd;
}

function manyIds(n: number): string {
  const parts: string[] = [];
  for (let i = 0; i < n; i += 1000) {
    const calls: Array<{ id: string }> = [];
    for (let j = i; j < Math.min(n, i + 1000); j++) calls.push({ id: `i${j}` });
    parts.push(chunk({ choices: [{ index: 0, delta: { tool_calls: calls }, finish_reason: null }] }));
  }
  return parts.join('') + openaiEnd;
}

function smallDeltas(n: number): string {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(chunk({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'word ' }, finish_reason: null }] }));
  return parts.join('') + openaiEnd;
}

function anthropicDeltas(n: number): string {
  const ev = (type: string, body: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...body })}\n\n`;
  const parts = [ev('message_start', { message: { usage: { input_tokens: 1, output_tokens: 1 } } }), ev('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 't', name: 'write_file', input: {} } })];
  for (let i = 0; i < n; i++) parts.push(ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: 'abcdefgh' } }));
  parts.push(ev('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 2 } }), ev('message_stop', {}));
  return parts.join('');
}

interface Row {
  shape: string;
  bytes: number;
  piece: number;
  cpu_s: number;
  mb_per_s: number;
}

function measure(shape: string, body: string, piece: number, format: 'openai' | 'anthropic'): Row {
  const bytes = Buffer.from(body);
  const before = process.cpuUsage();
  if (format === 'openai') {
    const acc = new ChatAccumulator('bench');
    const r = new SseReader((e) => acc.event(e.data));
    for (let at = 0; at < bytes.length; at += piece) r.push(bytes.subarray(at, at + piece));
    r.end();
    acc.turn();
  } else {
    const acc = new MessagesAccumulator('bench');
    const r = new SseReader((e) => acc.event(e.event, e.data));
    for (let at = 0; at < bytes.length; at += piece) r.push(bytes.subarray(at, at + piece));
    r.end();
    acc.turn();
  }
  const d = process.cpuUsage(before);
  const cpu = (d.user + d.system) / 1e6;
  return { shape, bytes: bytes.length, piece, cpu_s: cpu, mb_per_s: bytes.length / MIB / Math.max(cpu, 1e-6) };
}

export async function run(): Promise<Row[]> {
  return [
    measure('one 2 MiB line', longLine(2), 1024, 'openai'),
    measure('one 8 MiB line', longLine(8), 1024, 'openai'),
    measure('117,500 tool-call ids', manyIds(117500), 65536, 'openai'),
    measure('470,000 tool-call ids', manyIds(470000), 65536, 'openai'),
    measure('100,000 small text deltas', smallDeltas(100000), 1024, 'openai'),
    measure('100,000 anthropic argument deltas', anthropicDeltas(100000), 1024, 'anthropic'),
  ];
}
