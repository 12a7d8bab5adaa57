// The console feed's own bookkeeping, on a real store, with its reads driven by hand
// (a read interval far too long to fire): what one page was sent never hides a change
// from another, and an idle store costs no snapshot.
import { PassThrough } from 'node:stream';
import type { ServerResponse } from 'node:http';
import t from 'tap';
import { Feed } from '../../src/console/feed.js';
import { openDb } from '../../src/store/db.js';
import { ensureProfileDir } from '../../src/store/profile.js';
import { sandbox } from '../fixtures/env.js';

const limits = { sse_poll_ms: 3_600_000, sse_keepalive_ms: 3_600_000, sse_events_per_tick: 500, event_body_chars: 65536, page_size: 50 };

function page() {
  const res = new PassThrough();
  let text = '';
  res.on('data', (d) => (text += d));
  return { res: res as unknown as ServerResponse, states: () => (text.match(/^event: state$/gm) ?? []).length, end: () => res.emit('close') };
}

t.test('a page already open still gets a change committed just before a second page connects', async (t) => {
  const sb = sandbox('feed');
  ensureProfileDir(sb.profile);
  const db = openDb(sb.profile, 5000);
  const feed = new Feed(() => db, limits, () => {});
  t.teardown(() => {
    feed.close();
    db.close();
  });
  const a = page();
  feed.add(a.res);
  t.equal(a.states(), 1, 'the first page starts with the state');
  feed.tick();
  t.equal(a.states(), 1, 'nothing committed: nothing sent');

  // Another process trusts a project (written here straight to the store).
  const now = new Date().toISOString();
  db.prepare("INSERT INTO projects (path, trusted, level, trusted_at, updated_at) VALUES (?, 1, 'workspace', ?, ?)").run(sb.project, now, now);
  const b = page();
  feed.add(b.res);
  t.equal(b.states(), 1, 'the second page starts with the state, the change in it');
  feed.tick();
  t.equal(a.states(), 2, 'the first page gets the change at the next read');
});
