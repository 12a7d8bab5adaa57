/*
 * Frames over an engine socket, for both ends: bounded newline-delimited JSON
 * (src/transport/framing.ts, with the engine's limits), each frame checked
 * against its schema before anyone acts on it.
 *
 *   bytes ─► LineFramer (frame, lifetime, rate, depth caps) ─► schema ─► onFrame
 *   any fault ─► onFault(code, detail) once; the owner of the channel closes it
 *
 * Two ways an exchange is abandoned are caught here: a frame that starts and is
 * not finished within the deadline, and a frame we send that the peer does not
 * read (the socket does not drain) within the deadline.
 */
import type { Socket } from 'node:net';
import type { EngineFrame } from '../../../gen/types/engine-frame.js';
import type { EngineReply } from '../../../gen/types/engine-reply.js';
import type { Limits } from '../../../gen/types/limits.js';
import { type ErrorCode, ScError } from '../../errors.js';
import { check } from '../../schema/validate.js';
import { LineFramer } from '../../transport/framing.js';

type Key = 'engine-frame' | 'engine-reply';
type Of<K extends Key> = K extends 'engine-frame' ? EngineFrame : EngineReply;

export class FrameChannel<K extends Key> {
  private readonly framer: LineFramer;
  private faulted = false;
  private partialTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly sock: Socket,
    private readonly key: K,
    private readonly limits: Limits['engine'],
    private readonly deadlineMs: number,
    private readonly onFrame: (frame: Of<K>) => void,
    private readonly onFault: (code: ErrorCode, detail: string) => void,
  ) {
    this.framer = new LineFramer(
      { frame_bytes: limits.frame_bytes, lifetime_bytes: limits.lifetime_bytes, frames_per_second: limits.frames_per_second, frame_depth: limits.frame_depth },
      (msg) => this.frame(msg),
      (fault, detail) => this.fault('SC_ENGINE_PROTOCOL', `${fault}: ${detail}`),
      (_top, detail) => this.fault('SC_ENGINE_PROTOCOL', detail),
    );
    sock.on('data', (chunk: Buffer) => {
      if (this.faulted) return;
      this.framer.push(chunk);
      // A frame left half-sent must be finished in time, or the exchange is abandoned.
      const open = chunk.length > 0 && chunk[chunk.length - 1] !== 0x0a;
      if (open && !this.partialTimer) {
        this.partialTimer = setTimeout(() => this.fault('SC_ENGINE_PROTOCOL', `a frame was left unfinished for ${this.deadlineMs} ms`), this.deadlineMs);
        this.partialTimer.unref();
      } else if (!open && this.partialTimer) {
        clearTimeout(this.partialTimer);
        this.partialTimer = undefined;
      }
    });
    sock.on('end', () => this.framer.end());
    sock.on('close', () => this.clearTimer());
  }

  get dead(): boolean {
    return this.faulted || this.sock.destroyed;
  }

  private clearTimer(): void {
    if (this.partialTimer) clearTimeout(this.partialTimer);
    this.partialTimer = undefined;
  }

  private frame(msg: Record<string, unknown>): void {
    if (this.faulted) return;
    let frame: Of<K>;
    try {
      frame = check<Of<K>>(this.key, msg, 'SC_ENGINE_PROTOCOL', `a frame (${this.key})`);
    } catch (err) {
      return this.fault('SC_ENGINE_PROTOCOL', (err as ScError).message);
    }
    this.onFrame(frame);
  }

  private fault(code: ErrorCode, detail: string): void {
    if (this.faulted) return;
    this.faulted = true;
    this.clearTimer();
    this.onFault(code, detail);
  }

  /** Writes one frame; a peer that does not read it within the deadline has abandoned the exchange. */
  send(frame: Of<K extends 'engine-frame' ? 'engine-reply' : 'engine-frame'>): Promise<void> {
    return new Promise((resolve) => {
      if (this.sock.destroyed || !this.sock.writable) return resolve();
      const flushed = this.sock.write(`${JSON.stringify(frame)}\n`);
      if (flushed) return resolve();
      const timer = setTimeout(() => {
        this.sock.off('drain', drained);
        this.fault('SC_ENGINE_TIMEOUT', `the peer did not read a frame within ${this.deadlineMs} ms`);
        resolve();
      }, this.deadlineMs);
      timer.unref();
      const drained = () => {
        clearTimeout(timer);
        resolve();
      };
      this.sock.once('drain', drained);
    });
  }
}
