/*
 * Per-connection operation limits: at most N tool or resource operations at
 * once, each within a deadline. Past the concurrency cap a call is refused at
 * once (SC_BUSY) rather than queued, so a flood cannot build an unbounded backlog.
 *
 *   run(fn) ─► slot ─► fn(signal) settles the call ─► slot freed
 *                  ├─► deadline: SC_TIMEOUT, then the signal aborts
 *                  └─► still running once this event-loop turn's I/O is handled (setImmediate):
 *                      the caller's signal is followed from then on (an abort before that
 *                      is carried over when the link is made)
 *
 * Every operation has the same deadline, so they expire in start order: one
 * timer for the oldest running operation serves them all (a timer and a
 * Promise.race per call cost more than the call's gate on a fast tool).
 * The caller's signal (the SDK's, one per request) is linked late for the same
 * reason: adding and removing an abort listener cost about 40 µs of a paced call,
 * and a fast tool has answered before the link would be made. A cancellation comes
 * with a later message, read after the check phase that links; one that came sooner
 * (in the same read, or the connection closing meanwhile) is carried over then.
 */
import { ScError } from '../errors.js';

interface Op {
  readonly due: number;
  readonly ctl: AbortController;
  readonly fail: (err: ScError) => void;
  done: boolean;
}

export class OperationLimiter {
  private active = 0;
  /** Running operations, oldest first (finished ones are dropped lazily). */
  private readonly queue: Op[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly max: number, private readonly deadlineMs: number) {}

  get running(): number {
    return this.active;
  }

  run<T>(outer: AbortSignal | undefined, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (this.active >= this.max) return Promise.reject(new ScError('SC_BUSY', `${this.max} operations are already running on this connection; retry when one finishes`));
    this.active++;
    const ctl = new AbortController();
    const onOuter = outer ? () => ctl.abort(outer.reason) : undefined;
    let linked = false;
    return new Promise<T>((resolve, reject) => {
      const op: Op = {
        due: performance.now() + this.deadlineMs,
        ctl,
        done: false,
        fail: (err) => {
          // Reject before aborting: an operation that ends on abort must still be reported as timed out.
          finish();
          reject(err);
          ctl.abort(new Error('deadline'));
        },
      };
      const finish = (): boolean => {
        if (op.done) return false;
        op.done = true;
        // With nothing running, a deadline left armed must not keep the process alive.
        if (--this.active === 0) this.timer?.unref();
        if (linked) outer!.removeEventListener('abort', onOuter!);
        return true;
      };
      if (outer?.aborted) ctl.abort(outer.reason);
      else if (outer) {
        setImmediate(() => {
          if (op.done) return;
          if (outer.aborted) return void ctl.abort(outer.reason);
          outer.addEventListener('abort', onOuter!, { once: true });
          linked = true;
        });
      }
      this.queue.push(op);
      this.arm();
      this.timer?.ref();
      let p: Promise<T>;
      try {
        p = fn(ctl.signal);
      } catch (err) {
        p = Promise.reject(err);
      }
      p.then(
        (v) => finish() && resolve(v),
        (e) => finish() && reject(e),
      );
    });
  }

  /** Keeps one timer, set for the oldest operation still running. */
  private arm(): void {
    while (this.queue.length && (this.queue[0] as Op).done) this.queue.shift();
    const first = this.queue[0];
    if (!first) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
      return;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => this.expire(), Math.max(0, first.due - performance.now()));
    if (this.active === 0) this.timer.unref();
  }

  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    while (this.queue.length) {
      const op = this.queue[0] as Op;
      if (!op.done && op.due > now) break;
      this.queue.shift();
      if (!op.done) op.fail(new ScError('SC_TIMEOUT', `the operation did not finish within ${this.deadlineMs} ms`));
    }
    this.arm();
  }
}
