/*
 * Per-connection operation limits: at most N tool or resource operations at
 * once, each within a deadline. Past the concurrency cap a call is refused at
 * once (SC_BUSY) rather than queued, so a flood cannot build an unbounded backlog.
 */
import { ScError } from '../errors.js';

export class OperationLimiter {
  private active = 0;

  constructor(private readonly max: number, private readonly deadlineMs: number) {}

  get running(): number {
    return this.active;
  }

  async run<T>(outer: AbortSignal | undefined, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (this.active >= this.max) throw new ScError('SC_BUSY', `${this.max} operations are already running on this connection; retry when one finishes`);
    this.active++;
    const ctl = new AbortController();
    const onOuter = () => ctl.abort(outer?.reason);
    outer?.addEventListener('abort', onOuter, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // Reject before aborting: an operation that ends on abort must still be reported as timed out.
        reject(new ScError('SC_TIMEOUT', `the operation did not finish within ${this.deadlineMs} ms`));
        ctl.abort(new Error('deadline'));
      }, this.deadlineMs);
    });
    try {
      return await Promise.race([fn(ctl.signal), deadline]);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
      this.active--;
    }
  }
}
