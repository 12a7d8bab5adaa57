/*
 * An incremental server-sent-events reader: bytes in, {event, data} out.
 *
 *   chunk ─► utf-8 (a character split across chunks is kept) ─► lines (\n, \r\n, \r)
 *        ─► `event:` / `data:` fields ─► blank line dispatches one event
 *
 * Comments (`:`) and unknown fields are skipped, as the format says. Line
 * length is bounded by the response cap the wire layer applies before this.
 */
export interface SseEvent {
  readonly event: string;
  readonly data: string;
}

export class SseReader {
  private readonly decoder = new TextDecoder('utf-8');
  private buf = '';
  private event = '';
  private data: string[] = [];
  private pendingCr = false;

  constructor(private readonly onEvent: (e: SseEvent) => void) {}

  push(chunk: Uint8Array): void {
    let text = this.decoder.decode(chunk, { stream: true });
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    this.buf += text;
    let start = 0;
    for (let i = 0; i < this.buf.length; i++) {
      const c = this.buf.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(this.buf.slice(start, i));
      if (c === 13) {
        if (i + 1 === this.buf.length) this.pendingCr = true;
        else if (this.buf.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.buf = this.buf.slice(start);
  }

  /** At the end of the stream: an event not closed by a blank line still counts. */
  end(): void {
    if (this.buf) this.line(this.buf);
    this.buf = '';
    this.line('');
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length) this.onEvent({ event: this.event || 'message', data: this.data.join('\n') });
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
  }
}
