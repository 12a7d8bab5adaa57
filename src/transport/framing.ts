/*
 * Bounded newline-delimited JSON-RPC framing, shared by the inbound stdio
 * server and the outbound stdio client.
 *
 *   chunk ─► lifetime cap ─► split on \n ─► per line: token bucket (blank lines
 *   count) ─► frame cap ─► nesting depth (too deep: onDeep with the top-level
 *   id and method, nothing parsed) ─► JSON.parse ─► object, not array ─► onFrame
 *
 * Any violation is fatal for the connection: the framer reports one reason and
 * ignores everything after it. A partial line at end of input is "truncated".
 * The frame cap is checked while a line is still arriving, so a peer cannot
 * make us buffer an unbounded line before we notice.
 */
import { nestsDeeperThan, type TopLevel, topLevel } from './envelope.js';
import { TokenBucket } from './rate.js';

export interface FrameLimits {
  readonly frame_bytes: number;
  readonly lifetime_bytes: number;
  readonly frames_per_second: number;
  readonly frame_depth: number;
}

export type FrameFault = 'oversized' | 'lifetime' | 'flood' | 'malformed' | 'batch' | 'truncated';

export class LineFramer {
  private parts: Buffer[] = [];
  private partial = 0;
  private total = 0;
  private failed = false;
  private readonly rate: TokenBucket;

  constructor(
    private readonly limits: FrameLimits,
    private readonly onFrame: (message: Record<string, unknown>) => void,
    private readonly onFault: (fault: FrameFault, detail: string) => void,
    /** A frame nested deeper than frame_depth: not parsed, not fatal; its top-level id and method say whether to answer. */
    private readonly onDeep: (frame: TopLevel, detail: string) => void = () => {},
  ) {
    // The burst is what one window of the spec allows; the refill keeps the long-run rate.
    this.rate = new TokenBucket(limits.frames_per_second, limits.frames_per_second);
  }

  get dead(): boolean {
    return this.failed;
  }

  private fail(fault: FrameFault, detail: string): void {
    if (this.failed) return;
    this.failed = true;
    this.parts = [];
    this.onFault(fault, detail);
  }

  push(chunk: Buffer): void {
    if (this.failed) return;
    this.total += chunk.length;
    if (this.total > this.limits.lifetime_bytes) return this.fail('lifetime', `more than ${this.limits.lifetime_bytes} bytes received over this connection`);
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl === -1) break;
      const piece = chunk.subarray(start, nl);
      const line = this.partial ? Buffer.concat([...this.parts, piece]) : piece;
      this.parts = [];
      this.partial = 0;
      start = nl + 1;
      this.line(line);
      if (this.failed) return;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.partial += rest.length;
      if (this.partial > this.limits.frame_bytes) return this.fail('oversized', `a frame is larger than ${this.limits.frame_bytes} bytes`);
      this.parts.push(Buffer.from(rest));
    }
  }

  /** End of input: a line still being received was cut off. */
  end(): void {
    if (this.failed) return;
    if (this.partial > 0 && Buffer.concat(this.parts).toString('utf8').trim() !== '') {
      this.fail('truncated', `input ended inside a frame (${this.partial} bytes without a newline)`);
    }
  }

  private line(buf: Buffer): void {
    if (!this.rate.take()) return this.fail('flood', `more than ${this.limits.frames_per_second} frames in one second`);
    if (buf.length > this.limits.frame_bytes) return this.fail('oversized', `a frame is larger than ${this.limits.frame_bytes} bytes`);
    const text = buf.toString('utf8').replace(/\r$/, '');
    if (text.trim() === '') return;
    // Checked before JSON.parse: nothing downstream then recurses deeper than the limit.
    if (nestsDeeperThan(buf, this.limits.frame_depth)) return this.onDeep(topLevel(text), `the message nests deeper than ${this.limits.frame_depth} levels`);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return this.fail('malformed', 'a frame is not valid JSON');
    }
    if (Array.isArray(value)) return this.fail('batch', 'JSON-RPC batches are not accepted');
    if (value === null || typeof value !== 'object') return this.fail('malformed', 'a frame is not a JSON-RPC object');
    this.onFrame(value as Record<string, unknown>);
  }
}
