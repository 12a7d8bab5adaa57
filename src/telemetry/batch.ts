/*
 * A bounded export queue for spans and log records, with counts of what it sent, dropped and
 * failed to send. push() is all a call pays: it stores a reference and, at most, arms a timer.
 *
 *   push(item) ─► queue full (queue_items)? dropped++, nothing else happens
 *              └► queued ─► a full batch: a timer of 0 ms; else schedule_ms after the first item
 *   timer ─► the collector is being left alone (back-off)? ─► come back when it ends
 *         └► send(batch) (encode + POST, one batch at a time) ─► exported += n
 *              ├► the collector could not take it (refused, no answer, 429/5xx): the batch is held
 *              │  and sent again after the back-off, at most `retries` times, then failed += n
 *              └► refused for good (another status, an encoding error): failed += n
 *   close(deadline) ─► send everything queued, one batch after another, until the deadline or the
 *                      first failure (one attempt, even while backing off); what is left is dropped
 *
 * Why our own and not the SDK's batch processors: theirs drop silently when full and count
 * nowhere we can read, and status and shadow_doctor must say what was lost. Nothing here runs on
 * a caller's path but push(): encoding and sending start from an unreferenced timer, so a dead
 * collector neither delays a call nor keeps a process alive.
 */
import type { SignalCounts } from './hooks.js';

export interface BatchOptions {
  readonly queueItems: number;
  readonly batchItems: number;
  readonly scheduleMs: number;
  /** How many times a batch the collector could not take is sent again. */
  readonly retries: number;
}

/** What one send came to: `retry` when the collector could not take it (it may later); `skipped` when no attempt was made (back-off). */
export type SendOutcome = { readonly ok: true } | { readonly ok: false; readonly retry: boolean; readonly skipped?: boolean; readonly error: string };

/** Encodes and sends one batch; `last` is the shutdown's attempt, made even while the collector is being left alone. */
export type BatchSender<T> = (items: T[], last: boolean) => Promise<SendOutcome>;

export class BoundedBatch<T> {
  private queue: T[] = [];
  /** A batch the collector could not take, sent first when the back-off ends. */
  private held: { items: T[]; tries: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** What the timer is for: `soon` a full batch (0 ms), `later` schedule_ms after the first item, `backoff` the end of a back-off (a push does not bring that one forward). */
  private timerFor: 'soon' | 'later' | 'backoff' | undefined;
  private pumping: Promise<void> | undefined;
  private closed = false;
  /** Items handed to the sender and not answered yet. */
  private inflight = 0;
  /** Past the close deadline: a late answer counts nothing more (its items were counted dropped). */
  private abandoned = false;

  constructor(
    private readonly send: BatchSender<T>,
    private readonly o: BatchOptions,
    readonly counts: SignalCounts,
    private readonly onError: (message: string) => void,
    /** How long the collector is still being left alone, in ms. */
    private readonly backingOff: () => number,
  ) {}

  push(item: T): void {
    if (this.closed || this.queue.length >= this.o.queueItems) {
      this.counts.dropped++;
      return;
    }
    this.queue.push(item);
    // A send under way looks at the queue again when it ends; a back-off is waited out whatever arrives.
    if (this.pumping || this.timerFor === 'soon' || this.timerFor === 'backoff') return;
    if (this.queue.length >= this.o.batchItems) this.arm(0, 'soon');
    else if (!this.timer) this.arm(this.o.scheduleMs, 'later');
  }

  get queued(): number {
    return this.queue.length + (this.held?.items.length ?? 0);
  }

  private arm(ms: number, why: 'soon' | 'later' | 'backoff'): void {
    if (this.timer) clearTimeout(this.timer);
    this.timerFor = why;
    this.timer = setTimeout(() => this.fire(), ms);
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.timerFor = undefined;
    if (this.pumping || this.closed) return;
    const wait = this.backingOff();
    if (wait > 0) return this.arm(wait, 'backoff');
    this.pumping = this.pump().finally(() => {
      this.pumping = undefined;
      if (this.closed || !this.queued) return;
      const wait = this.backingOff();
      if (wait > 0) this.arm(wait, 'backoff');
      else if (this.held || this.queue.length >= this.o.batchItems) this.arm(0, 'soon');
      else this.arm(this.o.scheduleMs, 'later');
    });
  }

  /** The held batch, then every full batch, then what is left (its time has come); stops at the first failure. */
  private async pump(): Promise<void> {
    do {
      if (!(await this.sendOne(false))) return;
    } while ((this.held || this.queue.length >= this.o.batchItems) && !this.closed && this.backingOff() === 0);
  }

  /** True when the batch went out (or there was none). */
  private async sendOne(last: boolean): Promise<boolean> {
    const held = this.held;
    this.held = undefined;
    const items = held ? held.items : this.queue.splice(0, this.o.batchItems);
    if (items.length === 0) return true;
    this.inflight = items.length;
    let r: SendOutcome;
    try {
      r = await this.send(items, last);
    } catch (err) {
      r = { ok: false, retry: false, error: (err as Error)?.message ?? String(err) };
    }
    this.inflight = 0;
    if (this.abandoned) return false;
    if (r.ok) {
      this.counts.exported += items.length;
      return true;
    }
    if (r.skipped && !last) {
      this.held = { items, tries: held?.tries ?? 0 };
      return false;
    }
    this.onError(r.error);
    const tries = (held?.tries ?? 0) + 1;
    if (r.retry && !last && tries <= this.o.retries) this.held = { items, tries };
    else this.counts.failed += items.length;
    return false;
  }

  /**
   * Sends what is queued until `deadline` (epoch ms); then stops taking items, and counts the
   * rest as dropped. True when a send was still under way at the deadline.
   */
  async close(deadline: number): Promise<boolean> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const all = (async () => {
      if (this.pumping) await this.pumping;
      while (this.queued && !this.abandoned) if (!(await this.sendOne(true))) break;
    })();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
    clearTimeout(timer);
    this.abandoned = true;
    const stuck = this.inflight > 0;
    this.counts.dropped += this.queued + this.inflight;
    this.queue = [];
    this.held = undefined;
    this.inflight = 0;
    return stuck;
  }
}
