/*
 * What an external server may ask of us: nothing. The client advertises no
 * roots, sampling, elicitation or tasks; this wrapper answers the server's own
 * requests before the SDK sees them.
 *
 *   server ─► elicitation/create ─► declined ({action: 'decline'})
 *          ─► sampling/createMessage, roots/list, anything else ─► -32601 error
 *   a response to a call sent past the SDK (fast-calls.ts) ─► to that call, not the SDK
 *   everything that is not a server request passes through unchanged
 *
 * The SDK refuses to register an elicitation handler without advertising the
 * capability, so the decline is answered here, on the wire.
 */
import type { JSONRPCMessage, Transport, TransportSendOptions } from '@modelcontextprotocol/client';

export interface PeerRequests {
  declined: number;
  refused: number;
}

export class PeerGuard implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: unknown) => void;
  readonly seen: PeerRequests = { declined: 0, refused: 0 };
  /** The connection's calls sent past the SDK client: their answers go to them first. */
  calls?: { take(m: Record<string, unknown>): boolean; closed(): void };

  constructor(readonly inner: Transport) {}

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  get hasPerRequestStream(): boolean | undefined {
    return this.inner.hasPerRequestStream;
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  setSupportedProtocolVersions(versions: string[]): void {
    this.inner.setSupportedProtocolVersions?.(versions);
  }

  async start(): Promise<void> {
    this.inner.onclose = () => {
      this.calls?.closed();
      this.onclose?.();
    };
    this.inner.onerror = (e) => this.onerror?.(e);
    this.inner.onmessage = (m, extra) => {
      const msg = m as { id?: unknown; method?: unknown };
      if (this.calls?.take(msg as Record<string, unknown>)) return;
      const isRequest = typeof msg.method === 'string' && (typeof msg.id === 'string' || typeof msg.id === 'number');
      if (!isRequest) return this.onmessage?.(m, extra);
      const id = msg.id as string | number;
      if (msg.method === 'elicitation/create') {
        this.seen.declined++;
        void this.inner.send({ jsonrpc: '2.0', id, result: { action: 'decline' } } as JSONRPCMessage).catch(() => {});
        return;
      }
      if (msg.method === 'ping') return this.onmessage?.(m, extra);
      this.seen.refused++;
      void this.inner.send({ jsonrpc: '2.0', id, error: { code: -32601, message: `${String(msg.method).slice(0, 64)} is not offered by this client` } } as JSONRPCMessage).catch(() => {});
    };
    await this.inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
