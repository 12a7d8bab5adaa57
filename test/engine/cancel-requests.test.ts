// Cancel requests in the store: what `jobs cancel` records, what the running process
// looks up, and a job whose process is already gone settled on the spot.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { cancelsFor, requestCancel } from '../../src/engine/cancel-requests.js';
import { getJob, jobEvents } from '../../src/engine/jobs.js';
import { openDb } from '../../src/store/db.js';
import { ensureProfileDir } from '../../src/store/profile.js';
import { sandbox } from '../fixtures/env.js';

function store() {
  const sb = sandbox('cancel-req');
  ensureProfileDir(sb.profile);
  const db = openDb(sb.profile, 5000);
  const add = (id: string, owner: string, state: string) => {
    const at = new Date().toISOString();
    db.prepare("INSERT INTO jobs (id, project, kind, owner, ceiling, state, created_at, updated_at) VALUES (?, ?, 'agent', ?, 'workspace', ?, ?, ?)").run(id, sb.project, owner, state, at, at);
  };
  return { sb, db, add };
}

t.test('a request for a job of a live process is recorded once, for that process to find', async (t) => {
  const { sb, db, add } = store();
  t.teardown(() => db.close());
  add('job_live', `stdio:${process.pid}:x`, 'running');
  add('job_other', `stdio:${process.pid}:x`, 'running');
  t.equal(requestCancel(db, sb.project, 'job_live', 'cli:1:a').state, 'running', 'the owner cancels it, not the requester');
  requestCancel(db, sb.project, 'job_live', 'console');
  t.same(cancelsFor(db, ['job_live', 'job_other']), ['job_live'], 'only the asked-for job is found');
  t.same(cancelsFor(db, []), []);
  const asked = jobEvents(db, 'job_live', { limit: 50 }).items.filter((e) => e.kind === 'cancel_requested');
  t.equal(asked.length, 1, 'asked twice, recorded once');
  t.match(asked[0]?.body, { by: 'cli:1:a' });
});

t.test('a job whose process is gone is cancelled at once; an ended or unknown job is refused', async (t) => {
  const { sb, db, add } = store();
  t.teardown(() => db.close());
  const gone = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
  const pid = Number(gone.stdout.trim());
  add('job_orphan', `stdio:${pid}:x`, 'waiting_approval');
  t.equal(requestCancel(db, sb.project, 'job_orphan', 'cli:1:a').state, 'cancelled');
  t.ok(jobEvents(db, 'job_orphan', { limit: 50 }).items.some((e) => e.kind === 'owner_gone'), 'with the reason');
  t.throws(() => requestCancel(db, sb.project, 'job_orphan', 'cli:1:a'), { code: 'SC_JOB_NOT_RUNNING' }, 'an ended job is refused');
  t.throws(() => requestCancel(db, sb.project, 'job_none', 'cli:1:a'), { code: 'SC_JOB_NOT_FOUND' });
  t.throws(() => requestCancel(db, `${sb.project}-elsewhere`, 'job_orphan', 'cli:1:a'), { code: 'SC_JOB_NOT_FOUND' }, "another project's job is not found");
  t.equal(getJob(db, 'job_orphan')?.state, 'cancelled');
});
