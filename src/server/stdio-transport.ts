/*
 * The MCP transport for `mcp serve` over stdio, on our bounded framing.
 *
 *   stdin ─► LineFramer (1 MiB frame, 32 MiB lifetime, 128 frames/s, depth 64)
 *   ─► envelope check (a malformed request is answered -32600 here) ─► onmessage
 *   send() ─► one JSON line ─► stdout; when it is full, every send waits on one shared
 *             drain, for at most write_deadline_ms
 *
 * A fault closes the connection after one stderr line saying why. The first
 * request must arrive within init_deadline_ms. At end of input, requests already
 * received are still answered (within the operation deadline) before closing, so
 * `printf '…' | shadowcode mcp serve` gets its answers. Stdout carries protocol only.
 */
import type { Readable, Writable } from 'node:stream';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { envelopeProblem, invalidRequest } from '../transport/envelope.js';
import { LineFramer } from '../transport/framing.js';

export interface StdioLimits {
  readonly operation_deadline_ms: number;
  readonly frame_bytes: number;
  readonly lifetime_bytes: number;
  readonly frames_per_second: number;
  readonly init_deadline_ms: number;
  readonly write_deadline_ms: number;
  readonly frame_depth: number;
}

export class BoundedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private readonly framer: LineFramer;
  private closed = false;
  private sawRequest = false;
  private initTimer: NodeJS.Timeout | undefined;
  private readonly pending = new Set<string | number>();
  private ending = false;
  private draining: Promise<void> | undefined;
  private releaseDrain: (() => void) | undefined;
  private resolveClosed!: (reason: string) => void;
  /** Resolves with the reason once the connection is over, for whatever cause. */
  readonly done: Promise<string>;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    private readonly limits: StdioLimits,
    private readonly log: (line: string) => void,
  ) {
    this.done = new Promise((r) => (this.resolveClosed = r));
    this.framer = new LineFramer(
      limits,
      (msg) => {
        // A request the SDK would drop unanswered (an unknown member, a bad id) is answered here instead.
        const problem = envelopeProblem(msg);
        if (problem) {
          if (problem.answer !== undefined) void this.send(invalidRequest(problem.answer, problem.reason) as unknown as JSONRPCMessage);
          return;
        }
        if (typeof msg.method === 'string' && (typeof msg.id === 'string' || typeof msg.id === 'number')) {
          this.pending.add(msg.id);
          if (!this.sawRequest) {
            this.sawRequest = true;
            clearTimeout(this.initTimer);
          }
        }
        this.onmessage?.(msg as unknown as JSONRPCMessage);
      },
      (fault, detail) => this.shut(`protocol failure (${fault}): ${detail}`),
      // Too deep to parse: a request still gets its answer; a notification or response is dropped, as JSON-RPC wants.
      (frame, detail) => {
        if (frame.hasMethod && frame.hasId) void this.send(invalidRequest(frame.id ?? null, `Invalid Request: ${detail}`) as unknown as JSONRPCMessage);
      },
    );
  }

  private readonly onData = (chunk: Buffer) => this.framer.push(chunk);
  private readonly onEnd = () => {
    this.framer.end();
    if (this.framer.dead || this.pending.size === 0) return this.shut('end of input');
    this.ending = true;
    setTimeout(() => this.shut('end of input'), this.limits.operation_deadline_ms).unref();
  };
  private readonly onInputError = (err: Error) => this.shut(`input error: ${err.message}`);
  private readonly onOutputError = (err: Error) => this.shut(`output error: ${err.message}`);

  async start(): Promise<void> {
    this.input.on('data', this.onData);
    this.input.on('end', this.onEnd);
    this.input.on('error', this.onInputError);
    // The client stopped reading (EPIPE): the connection is over, said once on stderr, never a crash.
    this.output.on('error', this.onOutputError);
    this.initTimer = setTimeout(() => {
      if (!this.sawRequest) this.shut(`no request within ${this.limits.init_deadline_ms} ms of start`);
    }, this.limits.init_deadline_ms);
    this.initTimer.unref?.();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return;
    const line = `${JSON.stringify(message)}\n`;
    const id = (message as { id?: string | number; method?: string }).method === undefined ? (message as { id?: string | number }).id : undefined;
    if (id !== undefined) this.pending.delete(id);
    const flushed = this.output.write(line);
    if (this.ending && this.pending.size === 0) this.output.write('', () => this.shut('end of input'));
    if (flushed) return;
    await this.drained();
  }

  /** One wait for 'drain', shared by every send that found stdout full: one listener and one deadline, however many wait. */
  private drained(): Promise<void> {
    return (this.draining ??= new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.output.off('drain', done);
        this.draining = undefined;
        this.releaseDrain = undefined;
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        this.shut(`the client did not read a response within ${this.limits.write_deadline_ms} ms`);
      }, this.limits.write_deadline_ms);
      this.releaseDrain = done;
      this.output.on('drain', done);
    }));
  }

  async close(): Promise<void> {
    this.shut('closed by the server');
  }

  /** Stops reading, reports why on stderr (once), and tells the protocol layer. */
  private shut(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.initTimer);
    this.releaseDrain?.();
    this.input.off('data', this.onData);
    this.input.off('end', this.onEnd);
    // Release the input so a peer that stopped mid-stream cannot keep the process alive.
    this.input.destroy();
    if (reason !== 'end of input' && reason !== 'closed by the server') this.log(`shadowcode: closing the connection: ${reason}`);
    this.resolveClosed(reason);
    this.onclose?.();
  }
}
