// An approval changes only with a gate ticket for that very decision on that very
// approval: a ticket for another action, for the opposite decision, for another
// approval, or minted outside the gate is refused with SC_TICKET_REFUSED, and the row,
// its job and its events stay exactly as they were. Real store, real gate decisions.
import t from 'tap';
import { DECISION_ACTIONS, decideApproval, getApproval } from '../../src/engine/approvals.js';
import { getJob, jobEvents } from '../../src/engine/job-events.js';
import { enforce, type PendingRequest } from '../../src/policy/gate.js';
import { sql } from '../../src/store/db.js';
import type { GateTicket } from '../../src/ticket.js';
import { trustAsCli } from '../fixtures/decide.js';
import { connection, sandbox } from '../fixtures/env.js';

async function setup(t: any) {
  const sb = sandbox('sc-approvals');
  const c = await connection(sb);
  t.teardown(() => c.close());
  const db = c.engine.db();
  // The project a connection's request names is trusted in the store (the gate decides on that, not on the request).
  trustAsCli({ policy: c.engine.policy, db }, sb.project, 'workspace');
  const now = new Date().toISOString();
  // A test job waiting for its one command approval, and a second approval of the same job.
  sql(db, "INSERT INTO jobs (id, project, kind, owner, ceiling, state, title, created_at, updated_at) VALUES ('job-1', ?, 'test', 'owner-1', 'workspace', 'waiting_approval', 'npm test', ?, ?)").run(sb.project, now, now);
  for (const id of ['appr-a', 'appr-b']) sql(db, "INSERT INTO approvals (id, job_id, kind, action, state, created_at) VALUES (?, 'job-1', 'command', ?, 'pending', ?)").run(id, JSON.stringify({ argv: ['npm', 'test'], cwd: sb.project }), now);
  const gate = { policy: c.engine.policy, db: () => db };
  const cliReq = (action: string, resource?: PendingRequest['resource']): PendingRequest => ({ action, principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: null, ...(resource ? { resource } : {}) });
  const ticket = (req: PendingRequest): Promise<GateTicket> => enforce(gate, req, (tk) => tk);
  const state = () => ({ a: getApproval(db, 'appr-a'), b: getApproval(db, 'appr-b'), job: getJob(db, 'job-1')?.state, events: jobEvents(db, 'job-1', { limit: 100 }).items.map((e) => e.kind) });
  return { sb, c, db, cliReq, ticket, state };
}

t.test('each decision has its own actions, from the CLI user and from a connection', async (t) => {
  t.same(DECISION_ACTIONS, { approved: ['cli:approvals.approve', 'tool:shadow_approve.approve'], denied: ['cli:approvals.deny', 'tool:shadow_approve.deny'] });
});

t.test('a ticket that does not decide exactly this changes nothing: SC_TICKET_REFUSED', async (t) => {
  const e = await setup(t);
  const before = e.state();
  t.equal(before.a?.state, 'pending');
  const wrong: Array<[string, GateTicket, 'approved' | 'denied']> = [
    ['a read-only tool', await e.ticket(e.cliReq('cli:status', { kind: 'approval', id: 'appr-a' })), 'approved'],
    ['the opposite decision (deny, used to approve)', await e.ticket(e.cliReq('cli:approvals.deny', { kind: 'approval', id: 'appr-a' })), 'approved'],
    ['the opposite decision (approve, used to deny)', await e.ticket(e.cliReq('cli:approvals.approve', { kind: 'approval', id: 'appr-a' })), 'denied'],
    ['another approval of the same job', await e.ticket(e.cliReq('cli:approvals.approve', { kind: 'approval', id: 'appr-b' })), 'approved'],
    ['no approval named at all', await e.ticket(e.cliReq('cli:approvals.approve')), 'approved'],
    ['a record of another kind with the same id', await e.ticket(e.cliReq('cli:approvals.approve', { kind: 'job', id: 'appr-a' })), 'approved'],
    ['a ticket minted outside the gate', { decisionId: 'forged', action: 'cli:approvals.approve', ceiling: 'elevated', owner: 'cli', resource: { kind: 'approval', id: 'appr-a' } }, 'approved'],
  ];
  for (const [what, tk, decision] of wrong) {
    t.throws(() => decideApproval(tk, e.db, 'appr-a', decision, 'cli'), { code: 'SC_TICKET_REFUSED', message: /nothing was done/ }, `${what} is refused`);
    t.same(e.state(), before, `${what}: the approval, its job and its events are unchanged`);
  }
  // The matching ticket decides it: the refusals above were the ticket's doing.
  const right = await e.ticket(e.cliReq('cli:approvals.approve', { kind: 'approval', id: 'appr-a' }));
  t.equal(decideApproval(right, e.db, 'appr-a', 'approved', 'cli').id, 'appr-a');
  const after = e.state();
  t.equal(after.a?.state, 'approved');
  t.equal(after.a?.decided_by, 'cli');
  t.equal(after.job, 'queued', 'the test job moves with its approval');
  t.same(after.events, ['approval_approved', 'state'], "recorded as events: the decision, then the job's new state");
  t.equal(after.b?.state, 'pending', 'the other approval is untouched');
});

t.test("a connection's shadow_approve ticket decides the approval it named, and only that one", async (t) => {
  const e = await setup(t);
  const req = (id: string, decision: 'approve' | 'deny'): PendingRequest => ({
    action: `tool:shadow_approve.${decision}`,
    principal: { kind: 'stdio', owner: 'owner-1', allow_write: true, allow_approvals: true },
    project: { path: e.sb.project, trusted: true, level: 'workspace' },
    requested_level: 'workspace',
    resource: { kind: 'approval', id, owner: 'owner-1', project: e.sb.project },
  });
  const denyB = await e.ticket(req('appr-b', 'deny'));
  t.throws(() => decideApproval(denyB, e.db, 'appr-a', 'denied', 'owner-1'), { code: 'SC_TICKET_REFUSED' }, 'a deny of appr-b does not deny appr-a');
  t.equal(getApproval(e.db, 'appr-a')?.state, 'pending');
  t.equal(decideApproval(denyB, e.db, 'appr-b', 'denied', 'owner-1').state, 'denied', 'it denies appr-b');
  t.equal(getApproval(e.db, 'appr-a')?.state, 'pending', 'appr-a is still pending');
});
