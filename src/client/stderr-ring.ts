/*
 * A bounded capture of an external server's stderr. It keeps the newest
 * `cap` bytes and never stops reading, so a server that floods stderr cannot
 * block on a full pipe; what was dropped is counted. The text comes out only
 * redacted (known secret values, including this connection's env values,
 * scrubbed), and it is never put in task history.
 */
import { scrubText } from '../policy/redact.js';

export class StderrRing {
  private chunks: Buffer[] = [];
  private held = 0;
  private dropped = 0;

  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.held += chunk.length;
    while (this.held > this.cap && this.chunks.length) {
      const first = this.chunks[0] as Buffer;
      const over = this.held - this.cap;
      if (first.length <= over) {
        this.chunks.shift();
        this.held -= first.length;
        this.dropped += first.length;
      } else {
        this.chunks[0] = first.subarray(over);
        this.held -= over;
        this.dropped += over;
      }
    }
  }

  get droppedBytes(): number {
    return this.dropped;
  }

  get heldBytes(): number {
    return this.held;
  }

  /** The captured tail, with secret values replaced; the only way out of the ring. */
  redacted(): string {
    const text = Buffer.concat(this.chunks).toString('utf8');
    return `${this.dropped ? `[${this.dropped} earlier bytes dropped]\n` : ''}${scrubText(text)}`;
  }

  /**
   * The last `lines` lines that say something, redacted, each with its control characters
   * shown escaped (`\u001b`): they go into error messages a terminal prints, and a server's
   * text must not move the cursor or forge a line there. Empty when it wrote nothing.
   */
  tail(lines: number): string[] {
    if (lines <= 0) return [];
    const text = scrubText(Buffer.concat(this.chunks).toString('utf8'));
    return text
      .split(/\r?\n/)
      .filter((l) => l.trim() !== '')
      .slice(-lines)
      .map((l) => l.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
  }
}
