/*
 * An incremental server-sent-events reader: bytes in, {event, data} out.
 *
 *   chunk ─► utf-8 (a character split across chunks is kept) ─► lines (\n, \r\n, \r)
 *        ─► `event:` / `data:` fields ─► blank line dispatches one event
 *
 * Comments (`:`) and unknown fields are skipped, as the format says. Line
 * length is bounded by the response cap the wire layer applies before this;
 * the work is linear in the bytes received, however the lines are chunked.
 */
export interface SseEvent {
  readonly event: string;
  readonly data: string;
}

export class SseReader {
  private readonly decoder = new TextDecoder('utf-8');
  /** The pieces of a line not ended yet; joined once, when its ending arrives. */
  private partial: string[] = [];
  private event = '';
  private data: string[] = [];
  private pendingCr = false;

  constructor(private readonly onEvent: (e: SseEvent) => void) {}

  /**
   * Only the new text is scanned, and an unfinished line is kept as pieces:
   * a long line arriving in small chunks costs its length once, not once per chunk.
   */
  push(chunk: Uint8Array): void {
    const text = this.decoder.decode(chunk, { stream: true });
    let start = 0;
    if (this.pendingCr && text.charCodeAt(0) === 10) start = 1;
    if (text.length > 0) this.pendingCr = false;
    for (let i = start; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const tail = text.slice(start, i);
      if (this.partial.length) {
        this.partial.push(tail);
        const whole = this.partial.join('');
        this.partial = [];
        this.line(whole);
      } else this.line(tail);
      if (c === 13) {
        if (i + 1 === text.length) this.pendingCr = true;
        else if (text.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    if (start < text.length) this.partial.push(text.slice(start));
  }

  /** At the end of the stream: an event not closed by a blank line still counts. */
  end(): void {
    const rest = this.partial.join('') + this.decoder.decode();
    this.partial = [];
    if (rest) this.line(rest);
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
