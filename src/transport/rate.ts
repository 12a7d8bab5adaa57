/*
 * A sliding one-second window: hit() records one event and says whether the
 * count within the last second is still within the limit.
 */
export class RateWindow {
  private readonly stamps: number[] = [];
  private head = 0;

  constructor(private readonly perSecond: number, private readonly now: () => number = () => performance.now()) {}

  hit(): boolean {
    const t = this.now();
    while (this.head < this.stamps.length && t - (this.stamps[this.head] as number) >= 1000) this.head++;
    if (this.head > 1024) {
      this.stamps.splice(0, this.head);
      this.head = 0;
    }
    this.stamps.push(t);
    return this.stamps.length - this.head <= this.perSecond;
  }
}

/*
 * A token bucket for frames counted as they arrive: it holds up to `burst`
 * tokens (the count one window of the spec allows) and refills at `perSecond`.
 * Time runs on the monotonic clock, so while this process is paused (SIGSTOP,
 * a loaded machine) the bucket fills; a well-paced peer whose frames queued up
 * meanwhile is not mistaken for a flood, and a real flood still empties it.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(private readonly perSecond: number, private readonly burst: number = perSecond, private readonly now: () => number = () => performance.now()) {
    this.tokens = burst;
    this.last = now();
  }

  take(): boolean {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) * this.perSecond) / 1000);
    this.last = t;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
