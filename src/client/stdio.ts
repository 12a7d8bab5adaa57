/*
 * The stdio transport of the outbound client: an SDK Transport over a supervised
 * child (stdio-supervisor.ts), with the server's bounded framing.
 *
 *   openStdio(ticket 'mcp:connect', spec) ─► start(): node dist/mcp-supervisor.js
 *        (cwd = project real path, env = the connection's built env, no shell)
 *   child stdout ─► LineFramer (frame, lifetime, rate, depth caps) ─► onmessage
 *   child stderr ─► StderrRing (16 KiB, keeps draining)
 *   send(msg) ─► one line, refused above the frame cap
 *   close() ─► half-close the lifeline ─► supervisor: TERM, grace, KILL group, reap
 *           ─► its status line ─► cleanup outcome ─► onclose
 *
 * A framing fault is fatal: it is reported once (onerror, then the connection
 * closes), and nothing after it is parsed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { ScError } from '../errors.js';
import { type FrameLimits, LineFramer } from '../transport/framing.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { packageRoot } from '../util/paths.js';
import { StderrRing } from './stderr-ring.js';

export interface StdioSpec {
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly graceMs: number;
  readonly frames: FrameLimits;
  readonly stderrBytes: number;
}

export type CleanupOutcome = 'exited' | 'terminated' | 'killed' | 'spawn_failed' | 'unknown';

export interface CleanupReport {
  readonly outcome: CleanupOutcome;
  readonly leader: { code: number | null; signal: string | null } | null;
  readonly error: string | null;
}

export function openStdio(ticket: GateTicket, spec: StdioSpec): StdioTransport {
  assertTicket(ticket, 'mcp:connect');
  return new StdioTransport(spec);
}

export class StdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  readonly stderr: StderrRing;
  private sup: ChildProcess | undefined;
  private framer: LineFramer;
  private fault: ScError | undefined;
  private closing: Promise<CleanupReport> | undefined;
  private status = '';
  private exited: Promise<void> = Promise.resolve();
  private closedNotified = false;

  constructor(private readonly spec: StdioSpec) {
    this.stderr = new StderrRing(spec.stderrBytes);
    this.framer = new LineFramer(
      spec.frames,
      (m) => this.onmessage?.(m as JSONRPCMessage),
      (fault, detail) => this.fail(new ScError('SC_MCP_PROTOCOL', `the server broke the stdio framing (${fault}): ${detail}`, { fault })),
      // Too deep to parse safely: the connection cannot continue with a message it could not read.
      (_top, detail) => this.fail(new ScError('SC_MCP_PROTOCOL', `the server sent an unreadable frame: ${detail}`, { fault: 'deep' })),
    );
  }

  /** The fault that ended the connection, if one did. */
  get failure(): ScError | undefined {
    return this.fault;
  }

  get pid(): number | undefined {
    return this.sup?.pid;
  }

  async start(): Promise<void> {
    if (this.sup) throw new ScError('SC_INTERNAL', 'stdio transport started twice');
    const payload = Buffer.from(JSON.stringify({ argv: this.spec.argv, cwd: this.spec.cwd, grace_ms: this.spec.graceMs })).toString('base64');
    const sup = spawn(process.execPath, [join(packageRoot(), 'dist', 'mcp-supervisor.js'), payload], {
      cwd: this.spec.cwd,
      env: this.spec.env,
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      shell: false,
    });
    this.sup = sup;
    this.exited = new Promise((resolve) => sup.on('close', () => resolve()));
    sup.on('error', (err) => this.fail(new ScError('SC_MCP_CONNECT_FAILED', `cannot start the connection supervisor: ${err.message}`)));
    sup.stdin?.on('error', () => {});
    sup.stdout?.on('data', (c: Buffer) => this.framer.push(c));
    sup.stdout?.on('end', () => {
      this.framer.end();
      if (!this.closing) void this.cleanup();
    });
    sup.stderr?.on('data', (c: Buffer) => this.stderr.push(c));
    const life = sup.stdio[3] as Socket;
    life.on('error', () => {});
    life.on('data', (d: Buffer) => {
      if (this.status.length < 4096) this.status += d.toString('utf8');
    });
    sup.on('close', () => {
      // The supervisor is gone: the server and its group went with it.
      if (!this.closing) void this.cleanup();
    });
  }

  private fail(err: ScError): void {
    if (this.fault) return;
    this.fault = err;
    this.onerror?.(err);
    void this.cleanup();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.fault) throw this.fault;
    if (this.closing || !this.sup?.stdin || this.sup.stdin.destroyed) throw new ScError('SC_MCP_CALL_FAILED', 'the connection is closed');
    const line = `${JSON.stringify(message)}\n`;
    if (Buffer.byteLength(line) > this.spec.frames.frame_bytes) throw new ScError('SC_LIMIT_REACHED', `an outgoing frame is larger than ${this.spec.frames.frame_bytes} bytes`);
    const stdin = this.sup.stdin;
    if (!stdin.write(line)) await new Promise<void>((resolve) => { stdin.once('drain', resolve); stdin.once('close', resolve); });
  }

  async close(): Promise<void> {
    await this.cleanup();
  }

  /** Cleanup: ask the supervisor to end the group, wait for it, and report how it went. Idempotent. */
  cleanup(): Promise<CleanupReport> {
    this.closing ??= (async () => {
      const sup = this.sup;
      if (sup) {
        sup.stdin?.destroy();
        const life = sup.stdio[3] as Socket | null;
        life?.end();
        await this.exited;
      }
      let report: CleanupReport = { outcome: 'unknown', leader: null, error: null };
      try {
        const s = JSON.parse(this.status.split('\n')[0] ?? '') as CleanupReport;
        report = { outcome: s.outcome, leader: s.leader, error: s.error };
      } catch {
        /* no status line: the supervisor itself was killed; its group got no cleanup from it */
      }
      if (!this.closedNotified) {
        this.closedNotified = true;
        this.onclose?.();
      }
      return report;
    })();
    return this.closing;
  }
}
