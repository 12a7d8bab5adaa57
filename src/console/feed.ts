/*
 * The page's live feed: server-sent events read from the store, which is where every
 * engine (shared, temporary, another process's) records what its jobs do.
 *
 *   every sse_poll_ms, while a page listens:
 *     nothing committed since the last look (store/version.ts) ─► nothing more to read
 *     job_events after the last seq (trusted projects) ─► `step` events, one per row
 *     jobs/approvals fingerprint moved ─► one `state` event (the whole snapshot)
 *   every sse_keepalive_ms ─► a comment line, so a dead stream is noticed
 *
 * The page never polls; it renders what arrives. A stream starts with a `state`
 * event, so it needs no separate first read.
 */
import type { ServerResponse } from 'node:http';
import type { Db } from '../store/db.js';
import { storeVersion } from '../store/version.js';
import { snapshot, stateMark, trustedProjects } from './state.js';

export interface FeedLimits {
  readonly sse_poll_ms: number;
  readonly sse_keepalive_ms: number;
  readonly sse_events_per_tick: number;
  readonly event_body_chars: number;
  readonly page_size: number;
}

export class Feed {
  private readonly streams = new Set<ServerResponse>();
  private timer: NodeJS.Timeout | undefined;
  private keepalive: NodeJS.Timeout | undefined;
  private lastSeq = 0;
  private mark = '';
  /** The store's version at the last full look, and whether that look left rows for the next tick. */
  private version = '';
  private more = false;

  constructor(private readonly db: () => Db, private readonly L: FeedLimits, private readonly log: (line: string) => void) {}

  get size(): number {
    return this.streams.size;
  }

  add(res: ServerResponse): void {
    if (this.streams.size === 0) {
      this.lastSeq = (this.db().prepare('SELECT coalesce(max(seq), 0) AS s FROM job_events').get() as { s: number }).s;
      this.mark = stateMark(this.db());
      this.timer = setInterval(() => this.tick(), this.L.sse_poll_ms);
      this.keepalive = setInterval(() => this.broadcast(': keepalive\n\n'), this.L.sse_keepalive_ms);
    }
    // The mark stays the one the open pages were last sent: a change since then still reaches them at the next tick.
    this.streams.add(res);
    res.on('close', () => this.drop(res));
    res.write(this.frame('state', { ...snapshot(this.db(), this.L.page_size), seq: this.lastSeq }));
  }

  private drop(res: ServerResponse): void {
    if (!this.streams.delete(res) || this.streams.size) return;
    clearInterval(this.timer);
    clearInterval(this.keepalive);
  }

  private frame(event: string, data: unknown): string {
    return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
  }

  private broadcast(text: string): void {
    for (const res of this.streams) res.write(text);
  }

  tick(): void {
    try {
      const db = this.db();
      const version = storeVersion(db);
      if (version === this.version && !this.more) return;
      const rows = db
        .prepare('SELECT e.seq, e.job_id, e.at, e.kind, e.body, j.project FROM job_events e JOIN jobs j ON j.id = e.job_id WHERE e.seq > ? ORDER BY e.seq LIMIT ?')
        .all(this.lastSeq, this.L.sse_events_per_tick) as Array<{ seq: number; job_id: string; at: string; kind: string; body: string; project: string }>;
      this.more = rows.length === this.L.sse_events_per_tick;
      const trusted = rows.length ? new Set(trustedProjects(db)) : new Set<string>();
      let out = '';
      for (const r of rows) {
        this.lastSeq = r.seq;
        if (!trusted.has(r.project)) continue;
        const body = r.body.length > this.L.event_body_chars ? { truncated: true, chars: r.body.length, head: r.body.slice(0, this.L.event_body_chars) } : (JSON.parse(r.body) as unknown);
        out += this.frame('step', { seq: r.seq, job_id: r.job_id, project: r.project, at: r.at, kind: r.kind, body });
      }
      const mark = stateMark(db);
      if (mark !== this.mark) {
        this.mark = mark;
        out += this.frame('state', { ...snapshot(db, this.L.page_size), seq: this.lastSeq });
      }
      // Only a look that got this far counts: after a failed one the next tick reads again.
      this.version = version;
      if (out) this.broadcast(out);
    } catch (err) {
      this.log(`shadowcode console: feed: ${(err as Error).message}`);
    }
  }

  close(): void {
    for (const res of this.streams) res.end();
    this.streams.clear();
    clearInterval(this.timer);
    clearInterval(this.keepalive);
  }
}
