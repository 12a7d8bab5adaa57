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
