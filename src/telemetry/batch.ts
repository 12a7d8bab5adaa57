/*
 * A bounded export queue for spans and log records, with counts of what it sent,
 * dropped and failed to send.
 *
 *   push(item) ─► queue full (queue_items)? dropped++, nothing else happens
 *              └► queued ─► a full batch, or schedule_ms after the first item ─► export (one at a time)
 *   export(batch) ─► exporter (its own timeout, retries) ─► exported += n | failed += n
 *   flush(deadline) ─► export everything queued, one batch after another, until the deadline;
 *                      what is still queued then is dropped and counted
 *
 * Why our own and not the SDK's batch processors: theirs drop silently when full and count
 * nowhere we can read, and status and shadow_doctor must say what was lost. push() never
 * waits, and the timer is unreferenced: a dead collector neither delays a call nor keeps a
 * process alive.
 */
import type { SignalCounts } from './hooks.js';

export interface BatchOptions {
  readonly queueItems: number;
  readonly batchItems: number;
  readonly scheduleMs: number;
}

/** The part of an OpenTelemetry exporter a batch uses: code 0 is success. */
export interface ItemExporter<T> {
  export(items: T[], done: (result: { code: number; error?: Error }) => void): void;
}

export class BoundedBatch<T> {
  private queue: T[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  private closed = false;
  /** Items handed to the exporter and not answered yet. */
  private inflight = 0;
  /** Past the close deadline: a late answer counts nothing more (its items were counted dropped). */
  private abandoned = false;

  constructor(
    private readonly exporter: ItemExporter<T>,
    private readonly o: BatchOptions,
    readonly counts: SignalCounts,
    private readonly onError: (err: Error) => void,
  ) {}

  push(item: T): void {
    if (this.closed || this.queue.length >= this.o.queueItems) {
      this.counts.dropped++;
      return;
    }
    this.queue.push(item);
    if (this.queue.length >= this.o.batchItems) this.kick();
    else if (!this.timer && !this.sending) {
      this.timer = setTimeout(() => this.kick(), this.o.scheduleMs);
      this.timer.unref();
    }
  }

  get queued(): number {
    return this.queue.length;
  }

  /** Starts sending unless a send is under way (that one sends what follows when it ends). */
  private kick(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.sending || this.queue.length === 0) return;
    this.sending = this.sendAll().finally(() => {
      this.sending = undefined;
      if (this.queue.length && !this.closed) {
        this.timer = setTimeout(() => this.kick(), this.o.scheduleMs);
        this.timer.unref();
      }
    });
  }

  private async sendAll(): Promise<void> {
    while (this.queue.length >= this.o.batchItems || (this.queue.length && this.closed)) await this.sendOne();
    if (this.queue.length && !this.closed) await this.sendOne();
  }

  private sendOne(): Promise<void> {
    const batch = this.queue.splice(0, this.o.batchItems);
    this.inflight = batch.length;
    return new Promise<void>((resolve) => {
      try {
        this.exporter.export(batch, (r) => {
          this.inflight = 0;
          if (this.abandoned) return resolve();
          if (r.code === 0) this.counts.exported += batch.length;
          else {
            this.counts.failed += batch.length;
            if (r.error) this.onError(r.error);
          }
          resolve();
        });
      } catch (err) {
        this.inflight = 0;
        this.counts.failed += batch.length;
        this.onError(err as Error);
        resolve();
      }
    });
  }

  /**
   * Sends what is queued until `deadline` (epoch ms); then stops taking items, and counts the
   * rest as dropped. True when an export was still under way at the deadline.
   */
  async close(deadline: number): Promise<boolean> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const all = (async () => {
      if (this.sending) await this.sending;
      while (this.queue.length) await this.sendOne();
    })();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
    clearTimeout(timer);
    this.abandoned = true;
    const stuck = this.inflight > 0;
    this.counts.dropped += this.queue.length + this.inflight;
    this.queue = [];
    this.inflight = 0;
    return stuck;
  }
}
