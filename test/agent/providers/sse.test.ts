// The event-stream reader: line endings, split characters, comments, multi-line data.
import t from 'tap';
import { SseReader, type SseEvent } from '../../../src/agent/providers/sse.js';

function read(chunks: Array<string | Uint8Array>): SseEvent[] {
  const out: SseEvent[] = [];
  const r = new SseReader((e) => out.push(e));
  for (const c of chunks) r.push(typeof c === 'string' ? Buffer.from(c) : c);
  r.end();
  return out;
}

t.test('reads events ended by LF, CRLF or CR, even when the ending is split across chunks', async (t) => {
  t.same(read(['data: a\n\ndata: b\r\n\r\ndata: c\r\r']), [{ event: 'message', data: 'a' }, { event: 'message', data: 'b' }, { event: 'message', data: 'c' }]);
  t.same(read(['data: a\r', '\n\r', '\ndata: b\n\n']), [{ event: 'message', data: 'a' }, { event: 'message', data: 'b' }]);
});

t.test('keeps a character whose bytes are split across chunks', async (t) => {
  const bytes = Buffer.from('data: ✓ü\n\n');
  t.same(read([bytes.subarray(0, 7), bytes.subarray(7, 9), bytes.subarray(9)]), [{ event: 'message', data: '✓ü' }]);
});

t.test('names events, joins multi-line data, skips comments and unknown fields', async (t) => {
  t.same(read([': ping\nevent: message_start\nid: 4\ndata: {"a":\ndata: 1}\n\n']), [{ event: 'message_start', data: '{"a":\n1}' }]);
});

t.test('an event not closed by a blank line still counts at the end of the stream', async (t) => {
  t.same(read(['data: [DONE]']), [{ event: 'message', data: '[DONE]' }]);
});
