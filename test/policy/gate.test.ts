import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { GateRequest } from '../../gen/types/gate-request.js';
import { isErrorCode, ScError } from '../../src/errors.js';
import { admit, enforce } from '../../src/policy/gate.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { trustOf } from '../../src/policy/requests.js';
import { readAudit, verifyAudit } from '../../src/store/audit.js';
import { openDb } from '../../src/store/db.js';
import { ensureProfileDir } from '../../src/store/profile.js';
import { assertTicket } from '../../src/ticket.js';
import { registerSecretValue } from '../../src/util/secret-values.js';
import { trustAsCli } from '../fixtures/decide.js';
import { cli, sandbox, spawnCli } from '../fixtures/env.js';

/** A fresh profile whose store knows /p as trusted at workspace: the gate decides on stored trust, never on a caller's. */
function setup(t: Test) {
  const sb = sandbox('sc-gate');
  ensureProfileDir(sb.profile);
  const db = openDb(sb.profile, 1000);
  t.teardown(() => db.close());
  const policy = shippedPolicy();
  trustAsCli({ policy, db }, '/p', 'workspace');
  setupRows.set(db, readAudit(db, { limit: 100 }).at(-1)?.seq ?? 0);
  return { db, sb, env: { policy, db: () => db } };
}
type Db = ReturnType<typeof openDb>;
const setupRows = new WeakMap<Db, number>();
/** The audit rows a test's own requests wrote (after those of its setup). */
const audit = (db: Db, opts: { kinds?: string[]; limit: number }) => readAudit(db, { ...opts, afterSeq: setupRows.get(db) ?? 0 });
const decisions = (db: Db) => audit(db, { kinds: ['decision'], limit: 100 }).map((r) => r.body as { decision_id: string; action: string; allow: boolean; reasons: string[]; trust?: unknown });
const stdio = (over: Partial<GateRequest> = {}): GateRequest => ({
  action: 'tool:shadow_memory.append',
  principal: { kind: 'stdio', owner: 'conn-1', allow_write: false, allow_approvals: false },
  project: { path: '/p', trusted: true, level: 'workspace' },
  ...over,
});

t.test('a denied request never runs, is audited, and names the rules that denied it', async (t) => {
  const { db, env } = setup(t);
  let ran = false;
  const err = await enforce(env, stdio(), () => {
    ran = true;
  }).catch((e) => e);
  t.notOk(ran, 'run was not called');
  t.ok(err instanceof ScError);
  t.equal(err.code, 'SC_POLICY_DENIED');
  t.match(err.message, /write-needs-flag/);
  t.same(err.detail.reasons.sort(), ['write-needs-flag', 'write-needs-workspace-level']);
  const [row] = audit(db, { kinds: ['decision'], limit: 10 });
  t.match(row?.body, { decision_id: err.detail.decision_id, allow: false, action: 'tool:shadow_memory.append', policy_hash: shippedPolicy().hash });
  t.ok(verifyAudit(db).ok);
});

t.test('an allowed request runs after its decision is recorded, with a ticket for that action', async (t) => {
  const { db, env } = setup(t);
  const result = await enforce(env, stdio({ principal: { kind: 'stdio', owner: 'conn-1', allow_write: true, allow_approvals: false } }), (ticket) => {
    t.equal(audit(db, { limit: 10 }).length, 1, 'the row exists before run is called');
    assertTicket(ticket, 'tool:shadow_memory.append');
    t.equal(ticket.ceiling, 'workspace');
    t.equal(ticket.owner, 'conn-1');
    return 42;
  });
  t.equal(result, 42);
});

t.test('a malformed request is refused before any decision and never runs', async (t) => {
  const { db, env } = setup(t);
  const err = await enforce(env, { ...stdio(), action: 'not an action' }, () => t.fail('must not run')).catch((e) => e);
  t.equal(err.code, 'SC_POLICY_REQUEST_INVALID');
  t.equal(audit(db, { limit: 10 }).length, 0);
});

t.test('arguments are masked in the audit row', async (t) => {
  const { db, env } = setup(t);
  await enforce(env, { ...stdio({ action: 'tool:shadow_status' }), args: { api_token: 'abcdef123456', note: 'hello' } }, () => undefined);
  const [row] = audit(db, { limit: 1 });
  t.same((row?.body as { args: unknown }).args, { api_token: '[redacted]', note: 'hello' });
});

t.test('known secret values are scrubbed from every row decided together, in resources and arguments', async (t) => {
  const { db, env } = setup(t);
  const secret = `sk-${Math.random().toString(36).slice(2, 14)}`;
  registerSecretValue(secret, 'GATE_KEY');
  const outer = { ...stdio({ action: 'tool:shadow_status' }), resource: { kind: 'job', id: `job ${secret}`, project: '/p' }, args: { note: `outer ${secret}` } };
  const inner = { ...stdio({ action: 'tool:shadow_status' }), args: { list: ['x', `inner ${secret}`] } };
  const decided = admit(env, [outer, inner]);
  t.equal(decided.length, 2);
  const rows = audit(db, { kinds: ['decision'], limit: 10 }).map((r) => r.body as { resource?: unknown; args?: unknown });
  t.equal(rows.length, 2);
  t.same(rows[0]?.resource, { kind: 'job', id: 'job [secret:GATE_KEY]', project: '/p' });
  t.same(rows[0]?.args, { note: 'outer [secret:GATE_KEY]' });
  t.same(rows[1]?.args, { list: ['x', 'inner [secret:GATE_KEY]'] });
  t.notMatch(JSON.stringify(audit(db, { limit: 10 })), secret, 'the value is nowhere in the log');
});

t.test('when the audit row cannot be written, the action does not run', async (t) => {
  const { db, env } = setup(t);
  db.close();
  const err = await enforce(env, stdio({ action: 'tool:shadow_status' }), () => t.fail('must not run')).catch((e) => e);
  t.equal(err.code, 'SC_STORE_FAILED');
});

t.test('a ticket for one action does not open an executor of another', async (t) => {
  const { env } = setup(t);
  await enforce(env, stdio({ action: 'tool:shadow_status' }), (ticket) => {
    t.throws(() => assertTicket(ticket, 'cli:trust'), { code: 'SC_TICKET_REFUSED', message: /called with a ticket for tool:shadow_status; nothing was done/ });
    t.throws(() => assertTicket(ticket, ['cli:trust', 'cli:untrust']), { code: 'SC_TICKET_REFUSED' }, 'nor of any in a list without it');
    t.doesNotThrow(() => assertTicket(ticket, ['cli:trust', 'tool:shadow_status']), 'an executor listing its action opens');
  });
  t.throws(() => assertTicket({ decisionId: 'x', action: 'cli:trust', ceiling: 'elevated', owner: 'cli' }, 'cli:trust'), { code: 'SC_TICKET_REFUSED', message: /no ticket the gate minted/ }, 'a forged ticket is refused');
});

t.test('only the very ticket the gate minted opens: no copy, derived object or proxy of it does, and it cannot be changed', async (t) => {
  const { env } = setup(t);
  const ticket = await enforce(env, stdio({ action: 'tool:shadow_status' }), (x) => x);
  t.doesNotThrow(() => assertTicket(ticket, 'tool:shadow_status'), 'the real ticket opens');
  const fakes: Array<[string, unknown]> = [
    ['a spread copy', { ...ticket }],
    ['an Object.assign copy', Object.assign({}, ticket)],
    ['a structured clone', structuredClone(ticket)],
    ['an object whose prototype is the ticket', Object.create(ticket)],
    ['an object with the ticket class as prototype', Object.setPrototypeOf({ ...ticket }, Object.getPrototypeOf(ticket))],
    ['a proxy of the ticket', new Proxy(ticket, {})],
    ['null', null],
    ['a string', 'tool:shadow_status'],
  ];
  for (const [what, fake] of fakes) t.throws(() => assertTicket(fake as never, 'tool:shadow_status'), { code: 'SC_TICKET_REFUSED', message: /no ticket the gate minted/ }, `${what} is refused`);
  // Every ticket leads to its class: neither it nor a subclass of it builds one outside the gate.
  const Ticket = (ticket as object).constructor as new (...a: unknown[]) => object;
  const wanted = { decisionId: 'forged', action: 'cli:trust', ceiling: 'elevated', owner: 'cli' };
  t.throws(() => new Ticket(wanted), { code: 'SC_TICKET_REFUSED' }, "the ticket's own constructor builds nothing");
  t.throws(() => new Ticket(Symbol('mint'), wanted), { code: 'SC_TICKET_REFUSED' }, 'nor with a key of the same name');
  class Derived extends Ticket {
    constructor() {
      super(wanted);
    }
  }
  t.throws(() => new Derived(), { code: 'SC_TICKET_REFUSED' }, 'nor does a subclass of it');
  t.throws(() => Reflect.construct(Ticket, [wanted]), { code: 'SC_TICKET_REFUSED' }, 'nor Reflect.construct');
  t.ok(Object.isFrozen(ticket), 'the ticket is frozen');
  t.throws(() => {
    'use strict';
    (ticket as { action: string }).action = 'cli:trust';
  }, TypeError, 'its action cannot be rewritten');
  t.equal(ticket.action, 'tool:shadow_status');
});

t.test('an action is matched whole: no pattern in an executor opens a family', async (t) => {
  const { env } = setup(t);
  await enforce(env, stdio({ action: 'tool:shadow_status' }), (ticket) => {
    for (const pattern of ['*', 'tool:*', 'tool:shadow_*', 'tool:shadow_status*']) t.throws(() => assertTicket(ticket, pattern), { code: 'SC_TICKET_REFUSED' }, `${pattern} is not a pattern`);
  });
});

t.test('a ticket names the record its request named, and an executor can insist on it', async (t) => {
  const { env } = setup(t);
  const req = { ...stdio({ action: 'tool:shadow_status' }), resource: { kind: 'approval', id: 'appr-1', owner: 'someone', project: '/p' } };
  await enforce(env, req, (ticket) => {
    t.same(ticket.resource, { kind: 'approval', id: 'appr-1' }, 'kind and id, nothing else');
    t.ok(Object.isFrozen(ticket.resource), 'and it cannot be changed');
    t.doesNotThrow(() => assertTicket(ticket, 'tool:shadow_status', { kind: 'approval', id: 'appr-1' }));
    t.throws(() => assertTicket(ticket, 'tool:shadow_status', { kind: 'approval', id: 'appr-2' }), { code: 'SC_TICKET_REFUSED', message: /a ticket for approval appr-1/ });
    t.throws(() => assertTicket(ticket, 'tool:shadow_status', { kind: 'job', id: 'appr-1' }), { code: 'SC_TICKET_REFUSED' });
  });
  await enforce(env, stdio({ action: 'tool:shadow_status' }), (ticket) => {
    t.equal(ticket.resource, undefined, 'a request without a record makes a ticket without one');
    t.throws(() => assertTicket(ticket, 'tool:shadow_status', { kind: 'approval', id: 'appr-1' }), { code: 'SC_TICKET_REFUSED', message: /a ticket for no record/ });
  });
});

t.test('audited strings are cut at audit.string_chars from the policy in force', async (t) => {
  const { db, env } = setup(t);
  const small = { ...env.policy, limits: { ...env.policy.limits, audit: { string_chars: 100 } } } as typeof env.policy;
  await enforce({ ...env, policy: small }, stdio({ action: 'tool:shadow_status', args: { note: 'n'.repeat(500) } }), () => undefined);
  const [row] = audit(db, { kinds: ['decision'], limit: 10 });
  t.equal((row?.body as { args: { note: string } }).args.note, `${'n'.repeat(100)}…[400 more]`);
  const shipped = env.policy.limits.audit.string_chars;
  await enforce(env, stdio({ action: 'tool:shadow_status', args: { note: 'm'.repeat(shipped + 1) } }), () => undefined);
  const rows = audit(db, { kinds: ['decision'], limit: 10 });
  t.ok(rows.some((r) => (r.body as { args?: { note?: string } }).args?.note === `${'m'.repeat(shipped)}…[1 more]`), 'the shipped limit applies by default');
});

t.test('admit decides an HTTP request and its tool call in one transaction, before any ticket exists', async (t) => {
  const { db, env } = setup(t);
  const http = (action: string): GateRequest => ({ ...stdio({ action }), principal: { kind: 'http', owner: 'gw-1', allow_write: false, allow_approvals: false } });
  const [outer, inner] = admit(env, [http('http:request'), http('tool:shadow_status')]);
  t.ok(outer?.ticket && inner?.ticket, 'both allowed');
  const rows = audit(db, { kinds: ['decision'], limit: 10 });
  t.same(rows.map((r) => (r.body as { action: string }).action), ['http:request', 'tool:shadow_status']);
  t.equal(rows[0]?.at, rows[1]?.at, 'one commit');
  t.same(rows.map((r) => (r.body as { decision_id: string }).decision_id), [outer?.decisionId, inner?.decisionId]);
  t.ok(verifyAudit(db).ok);
});

t.test('admit stops at the first denial: what the denied request carries is never decided', async (t) => {
  const { db, env } = setup(t);
  const stranger = { kind: 'stdio' as const, owner: 'conn-1', allow_write: false, allow_approvals: false };
  const out = admit(env, [stdio({ action: 'http:request', principal: stranger }), stdio({ action: 'tool:shadow_status' })]);
  t.equal(out.length, 1);
  t.equal(out[0]?.denied?.code, 'SC_POLICY_DENIED');
  t.equal(out[0]?.ticket, undefined);
  t.same(audit(db, { kinds: ['decision'], limit: 10 }).map((r) => (r.body as { action: string }).action), ['http:request']);
});

t.test('a group commit decides independent lists in one transaction, each stopping at its own denial', async (t) => {
  const { db, env } = setup(t);
  const http = (action: string, owner: string): GateRequest => ({ ...stdio({ action }), principal: { kind: 'http', owner, allow_write: false, allow_approvals: false } });
  const stranger = { kind: 'stdio' as const, owner: 'conn-1', allow_write: false, allow_approvals: false };
  const [a, b, c] = admit(env, { groups: [[http('http:request', 'a'), http('tool:shadow_status', 'a')], [stdio({ action: 'http:request', principal: stranger }), stdio({ action: 'tool:shadow_status' })], [http('http:request', 'c')]] });
  t.ok(Array.isArray(a) && a.length === 2 && a.every((x) => x.ticket), 'the first list: both allowed');
  t.ok(Array.isArray(b) && b.length === 1 && b[0]?.denied?.code === 'SC_POLICY_DENIED' && !b[0].ticket, 'the second stops at its denial: what it carries is never decided');
  t.ok(Array.isArray(c) && c.length === 1 && c[0]?.ticket, 'the third is decided after a denied one');
  const rows = audit(db, { kinds: ['decision'], limit: 10 });
  t.same(rows.map((r) => (r.body as { action: string }).action), ['http:request', 'tool:shadow_status', 'http:request', 'http:request'], 'one row per decided request, each list in order');
  t.equal(new Set(rows.map((r) => r.at)).size, 1, 'one commit');
  const ids = [a, b, c].flatMap((g) => (Array.isArray(g) ? g.map((x) => x.decisionId) : []));
  t.same(rows.map((r) => (r.body as { decision_id: string }).decision_id), ids, 'each admission is its own row');
  t.equal(new Set(ids).size, 4);
  t.ok(verifyAudit(db).ok, 'the chain verifies');
});

t.test('in a group commit a list with a malformed request is left out whole; the others are decided', async (t) => {
  const { db, env } = setup(t);
  const { project: _omit, ...pending } = stdio({ action: 'tool:shadow_status' });
  const project = () => ({ path: '/p', trusted: true, level: 'workspace' as const });
  const bad = { ...pending, principal: { kind: 'nobody' } } as unknown as typeof pending;
  const [good, broken, late] = admit({ ...env, project }, { groups: [[pending], [pending, bad], [{ ...pending, action: 'tool:shadow_doctor' }]] });
  t.ok(Array.isArray(good) && good[0]?.ticket);
  t.ok(broken instanceof ScError && broken.code === 'SC_POLICY_REQUEST_INVALID', 'the list gets its error');
  t.ok(Array.isArray(late) && late[0]?.ticket);
  t.same(audit(db, { kinds: ['decision'], limit: 10 }).map((r) => (r.body as { action: string }).action), ['tool:shadow_status', 'tool:shadow_doctor'], 'no row of the malformed list, not even of its valid first request');
  t.ok(verifyAudit(db).ok);
});

t.test('a group commit that fails mid-transaction leaves no row and no ticket for any list', async (t) => {
  const { db, env } = setup(t);
  const { project: _omit, ...pending } = stdio({ action: 'tool:shadow_status' });
  // The first list carries its project; the second needs trust read, and the read fails after the first list's rows were built.
  const project = () => {
    throw new Error('disk gone');
  };
  const err = (() => {
    try {
      admit({ ...env, project }, { groups: [[stdio({ action: 'tool:shadow_status' })], [pending]] });
    } catch (e) {
      return e as ScError;
    }
    return undefined;
  })();
  t.equal(err?.code, 'SC_STORE_FAILED', 'every list fails');
  t.same(audit(db, { limit: 10 }), [], 'nothing was committed');
  db.close();
  const closed = (() => {
    try {
      admit(env, { groups: [[stdio({ action: 'tool:shadow_status' })]] });
    } catch (e) {
      return e as ScError;
    }
    return undefined;
  })();
  t.equal(closed?.code, 'SC_STORE_FAILED', 'a store that cannot be written denies the whole group');
});

t.test('trust left to the gate is read inside the transaction that records the decision', async (t) => {
  const { db, env } = setup(t);
  let reads = 0;
  const project = () => {
    reads++;
    // Inside the write transaction: this connection holds the lock while the gate reads.
    t.ok(db.inTransaction, 'read under the audit write lock');
    return { path: '/p', trusted: false, level: 'read_only' as const };
  };
  const { project: _omit, ...pending } = stdio({ action: 'tool:shadow_status' });
  const seen = await enforce({ ...env, project }, pending, (_ticket, req) => req);
  t.equal(reads, 1);
  t.same(seen.project, { path: '/p', trusted: false, level: 'read_only', holds_home: false }, 'the tool sees the trust that was decided on, and what the gate added');
  t.match(audit(db, { kinds: ['decision'], limit: 1 })[0]?.body, { project: '/p', allow: true });
});

t.test("a caller's trust is only a hint: an untrust another process commits after the caller read it denies, on the stored trust", async (t) => {
  const { db, sb, env } = setup(t);
  t.equal((await cli(sb, ['--project', sb.project, 'trust'])).code, 0);
  const task = { owner: 'job-1', ceiling: 'workspace' as const, project: sb.project };
  const write = (trust: GateRequest['project']): GateRequest => ({ action: 'file:write', principal: { kind: 'engine', owner: 'job-1', allow_write: true, allow_approvals: false }, project: trust, requested_level: 'workspace', resource: { kind: 'file', id: 'a.txt', owner: 'job-1', project: sb.project } });
  // As task-tools, the agent loop, change-watch and background jobs do: trust read before the gate's transaction.
  const read = trustOf(db, sb.project);
  t.match(read, { trusted: true, level: 'workspace' }, 'the caller read the project as trusted');
  t.equal(await enforce(env, write(read), () => 'ran'), 'ran', 'allowed while the store says trusted');
  // Another process withdraws trust through its own connection to the same state.db.
  const untrust = await spawnCli(sb, ['--project', sb.project, 'untrust']);
  t.equal(untrust.code, 0, untrust.stderr);
  const err = (await enforce(env, write(read), () => t.fail('must not run')).catch((e: ScError) => e)) as ScError;
  t.match(err, { code: 'SC_POLICY_DENIED', detail: { reasons: ['engine-needs-trust', 'engine-needs-workspace-level'] } }, 'denied on the stored trust, not the trust the caller carried');
  const row = decisions(db).at(-1);
  t.match(row, { action: 'file:write', allow: false });
  t.equal(row?.decision_id, err.detail?.decision_id);
  t.same(row?.trust, { trusted: false, level: 'read_only', network: false }, 'the row records the trust decided on');
  // policy explain --decision decides that row again from what it recorded: the same denial.
  const again = await cli(sb, ['--json', 'policy', 'explain', '--decision', String(row?.decision_id)]);
  t.equal(again.code, 0, again.stderr);
  t.match(JSON.parse(again.stdout), { allow: false, request: { project: { path: sb.project, trusted: false, level: 'read_only' } }, now: { allow: false } });
});

t.test('a level lowered in the store after the caller read it is the level decided on, for every request decided together', async (t) => {
  const { db, sb, env } = setup(t);
  t.equal((await cli(sb, ['--project', sb.project, 'trust', '--level', 'elevated'])).code, 0);
  const read = trustOf(db, sb.project);
  t.equal((await cli(sb, ['--project', sb.project, 'trust', '--level', 'read_only'])).code, 0);
  const engine = { kind: 'engine' as const, owner: 'job-1', allow_write: true, allow_approvals: false };
  const run = (action: string): GateRequest => ({ action, principal: engine, project: read, requested_level: 'elevated', resource: { kind: 'job', id: 'job-1', owner: 'job-1', project: sb.project } });
  const [status, job] = admit(env, [run('tool:shadow_status'), run('job:run')]);
  t.equal(status?.ticket?.ceiling, 'read_only', 'the ceiling is the stored level, not the elevated one the caller carried');
  t.same(status?.request.project, { path: sb.project, trusted: true, level: 'read_only', network: false, holds_home: false }, 'and the request a ticket runs with carries the stored trust');
  t.match(job?.denied, { code: 'SC_POLICY_DENIED', detail: { reasons: ['engine-needs-workspace-level'] } }, 'the second request of the list is decided on it too');
  t.same(decisions(db).slice(-2).map((r) => r.trust), [{ trusted: true, level: 'read_only', network: false }, { trusted: true, level: 'read_only', network: false }]);
});

t.test('a project the store does not know is untrusted, whatever the caller claims', async (t) => {
  const { db, env } = setup(t);
  const claimed = stdio({ principal: { kind: 'stdio', owner: 'conn-1', allow_write: true, allow_approvals: false }, project: { path: '/elsewhere', trusted: true, level: 'elevated', network: true } });
  const err = await enforce(env, claimed, () => t.fail('must not run')).catch((e: ScError) => e);
  t.match(err, { code: 'SC_POLICY_DENIED', detail: { reasons: ['write-needs-trust', 'write-needs-workspace-level'] } });
  t.same(decisions(db).at(-1)?.trust, { trusted: false, level: 'read_only', network: false });
  t.equal(await enforce(env, { ...claimed, project: { path: '/p', trusted: false, level: 'read_only' } }, () => 'ran'), 'ran', 'nor is a trusted one less trusted for what a caller claims');
});

t.test('the gate itself says whether a project holds the home folder: a caller cannot claim it does not', async (t) => {
  const { db, env } = setup(t);
  const homes = ['/home/me'];
  const trust = (path: string) => stdio({ action: 'cli:trust', principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: { path, trusted: false, level: 'read_only', holds_home: false } });
  for (const path of ['/home/me', '/home', '/']) {
    const err = await enforce({ ...env, homes }, trust(path), () => 'ran').catch((e: ScError) => e);
    t.match(err, { code: 'SC_PROJECT_HOLDS_HOME', detail: { reasons: ['project-holds-home'] } }, `${path}: the rule's own code`);
  }
  t.equal(await enforce({ ...env, homes }, trust('/home/me/src/app'), () => 'ran'), 'ran', 'a project inside the home');
  t.equal(await enforce({ ...env, homes }, trust('/home/other'), () => 'ran'), 'ran', "another user's folder beside it");
  t.match(audit(db, { kinds: ['decision'], limit: 10 }).map((r) => r.body), [{ allow: false }, { allow: false }, { allow: false }, { allow: true }, { allow: true }]);
});

t.test('a project that did not hold the home folder is refused once HOME moves into it', async (t) => {
  const { env } = setup(t);
  const sb = sandbox('sc-gate-home');
  const before = process.env.HOME;
  t.teardown(() => {
    process.env.HOME = before;
  });
  const trust = (path: string) => stdio({ action: 'cli:trust', principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: { path, trusted: false, level: 'read_only' } });
  process.env.HOME = join(sb.root, 'elsewhere');
  mkdirSync(process.env.HOME);
  // The same decision twice: an answer remembered for this path must not outlive the HOME it was for.
  t.equal(await enforce(env, trust(sb.project), () => 'ran'), 'ran', 'HOME beside the project');
  t.equal(await enforce(env, trust(sb.project), () => 'ran'), 'ran', 'and again');
  process.env.HOME = join(sb.project, 'me');
  mkdirSync(process.env.HOME);
  const err = await enforce(env, trust(sb.project), () => 'ran').catch((e: ScError) => e);
  t.match(err, { code: 'SC_PROJECT_HOLDS_HOME' }, 'HOME now inside the project');
});

t.test("a caller's list of home folders is read as it is at each decision, not as it was", async (t) => {
  const { env } = setup(t);
  const homes = ['/home/me'];
  const trust = stdio({ action: 'cli:trust', principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: { path: '/srv/app', trusted: false, level: 'read_only' } });
  t.equal(await enforce({ ...env, homes }, trust, () => 'ran'), 'ran', 'no home below /srv/app');
  homes.push('/srv/app/me');
  const err = await enforce({ ...env, homes }, trust, () => 'ran').catch((e: ScError) => e);
  t.match(err, { code: 'SC_PROJECT_HOLDS_HOME' }, 'the home added to the same list counts');
});

t.test('every error code a rule of the shipped policy names is a known one', async (t) => {
  const codes = shippedPolicy().permissions.rules.filter((r) => r.code).map((r) => r.code as string);
  t.ok(codes.length > 0);
  for (const c of codes) t.ok(isErrorCode(c), c);
});
