/*
 * The stdio transport of the outbound client: an SDK Transport over a child
 * started and supervised by the spawn point, in the sandbox, with the server's
 * bounded framing.
 *
 *   openStdio(ticket 'mcp:connect', spec) ─► start(): spawn/supervise ─► [bwrap …] server
 *        (cwd = project real path, env = the connection's built env, no shell,
 *         what its definition's sandbox key declares: folders, files, the network or named hosts)
 *   child stdout ─► LineFramer (frame, lifetime, rate, depth caps) ─► onmessage
 *   child stderr ─► StderrRing (16 KiB, keeps draining)
 *   send(msg) ─► one line, refused above the frame cap
 *   close() ─► stop(): TERM, grace, KILL group, reap (own-group.ts sandboxed, else the
 *              supervisor on its lifeline) ─► its status ─► cleanup outcome (and what it
 *              left in its private home and /tmp, now discarded) ─► onclose
 *
 * A framing fault is fatal: it is reported once (onerror, then the connection
 * closes), and nothing after it is parsed.
 */
import type { ChildProcess } from 'node:child_process';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { type Discarded, type SandboxBlock, type SandboxLevel, type Supervised, supervise } from '../engine/spawn/index.js';
import type { DeclaredSandbox } from '../catalog/definition.js';
import { ScError } from '../errors.js';
import type { Policy } from '../policy/load.js';
import type { Db } from '../store/db.js';
import { type FrameLimits, LineFramer } from '../transport/framing.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { StderrRing } from './stderr-ring.js';

export interface StdioSpec {
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly graceMs: number;
  readonly frames: FrameLimits;
  readonly stderrBytes: number;
  /** How many of its last stderr lines a failure shows (limits.stdio_client.stderr_tail_lines). */
  readonly stderrTailLines?: number;
  /** The whole network (the definition's sandbox.network: true). */
  readonly network: boolean;
  /** What the definition declares the server needs (its sandbox key): folders, files, hosts. */
  readonly declared?: DeclaredSandbox;
  readonly policy: Policy;
  readonly db: Db;
}

export type CleanupOutcome = 'exited' | 'terminated' | 'killed' | 'spawn_failed' | 'unknown';

export interface CleanupReport {
  readonly outcome: CleanupOutcome;
  readonly leader: { code: number | null; signal: string | null } | null;
  readonly error: string | null;
  /** What the server wrote in its private home and /tmp, discarded with its sandbox. */
  readonly discarded?: Discarded | null;
}

export function openStdio(ticket: GateTicket, spec: StdioSpec): StdioTransport {
  assertTicket(ticket, 'mcp:connect');
  return new StdioTransport(spec, ticket);
}

export class StdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  readonly stderr: StderrRing;
  private sup: ChildProcess | undefined;
  private supervised: Supervised | undefined;
  private framer: LineFramer;
  private fault: ScError | undefined;
  private closing: Promise<CleanupReport> | undefined;
  private report: CleanupReport | undefined;
  private exited: Promise<void> = Promise.resolve();
  private closedNotified = false;

  constructor(private readonly spec: StdioSpec, private readonly ticket: GateTicket) {
    assertTicket(ticket, 'mcp:connect');
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

  /**
   * What the server last wrote to stderr, for a failure's message (connection.ts withStderr), and
   * the paths those lines name that its sandbox hid or showed read-only (explain.ts), each with its fix.
   */
  stderrTail(): { lines: string[]; sandboxed: boolean; blocks: SandboxBlock[] } {
    const lines = this.stderr.tail(this.spec.stderrTailLines ?? 0);
    const sandboxed = this.supervised?.level === 'bwrap';
    let blocks: SandboxBlock[] = [];
    if (sandboxed && lines.length) {
      try {
        blocks = this.supervised?.explain(lines.join('\n'), null) ?? [];
      } catch {
        blocks = []; // an explanation is a courtesy: never a second failure on top of the server's
      }
    }
    return { lines, sandboxed, blocks };
  }

  /** The sandbox the server runs in, once started. */
  get sandbox(): SandboxLevel | undefined {
    return this.supervised?.level;
  }

  async start(): Promise<void> {
    if (this.sup) throw new ScError('SC_INTERNAL', 'stdio transport started twice');
    const s = supervise(this.ticket, {
      kind: 'mcp_server', argv: this.spec.argv, cwd: this.spec.cwd, env: this.spec.env, graceMs: this.spec.graceMs, stdin: 'pipe',
      confine: { project: this.spec.cwd, network: this.spec.network, ...(this.spec.declared ? { declared: this.spec.declared } : {}) }, trustedArgv: true, policy: this.spec.policy, db: this.spec.db,
    });
    const sup = s.process;
    this.supervised = s;
    void s.status.then((st) => (this.report = { outcome: st.outcome, leader: st.leader, error: st.error }));
    this.sup = sup;
    this.exited = new Promise((resolve) => sup.on('close', () => resolve()));
    sup.on('error', (err) => this.fail(new ScError('SC_MCP_CONNECT_FAILED', `cannot start the server's process (bwrap, or the supervisor without a sandbox): ${err.message}`)));
    sup.stdin?.on('error', () => {});
    sup.stdout?.on('data', (c: Buffer) => this.framer.push(c));
    sup.stdout?.on('end', () => {
      this.framer.end();
      if (!this.closing) void this.cleanup();
    });
    sup.stderr?.on('data', (c: Buffer) => this.stderr.push(c));
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
        this.supervised?.stop();
        await this.exited;
        if (this.supervised) await this.supervised.status;
      }
      const discarded = this.supervised ? await this.supervised.discarded : null;
      // No status line means the supervisor itself was killed; its group got no cleanup from it.
      const report: CleanupReport = { ...(this.report && this.report.outcome !== 'unknown' ? this.report : { outcome: 'unknown' as const, leader: null, error: null }), discarded };
      if (!this.closedNotified) {
        this.closedNotified = true;
        this.onclose?.();
      }
      return report;
    })();
    return this.closing;
  }
}
