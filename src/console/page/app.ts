/*
 * The console page: plain DOM, bundled by scripts/build.mjs into dist/console/app.js.
 *
 *   EventSource api/events ─► `state` (projects, jobs, approvals with digests) ─► re-render lists
 *                          └► `step` (one job event) ─► appended to the followed job
 *   buttons ─► POST api/decide {id, decision, digest} | api/rollback | api/accept | api/cancel (same origin, cookie)
 *
 * INVARIANT: every string from a model, a server, a command or a file becomes a text node
 * (el() and shown()); nothing is ever parsed as HTML. Its control, bidi and invisible characters
 * are shown as escapes (`\x1b`, `\r`, `\u{202e}`, util/inert-text.ts) in a marked span, so a
 * file name or a diff line cannot reorder or hide what a person approves: inside <pre> the
 * lines and tabs stay, anywhere else the text is one line.
 */

import { inertParts } from '../../util/inert-text.js';

type Json = any;
type Child = Node | string | null | undefined | false;

/** Untrusted text as nodes: plain runs as text, each escape in a <span class="esc">; `block` keeps newlines and tabs. */
function shown(text: string, block: boolean): Node {
  const parts = inertParts(text, block);
  if (parts.length === 1 && !parts[0]?.escape) return document.createTextNode(text);
  const f = document.createDocumentFragment();
  for (const p of parts) {
    if (!p.escape) f.append(document.createTextNode(p.text));
    else {
      const span = document.createElement('span');
      span.className = 'esc';
      span.textContent = p.text;
      f.append(span);
    }
  }
  return f;
}

function el(tag: string, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElement {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(typeof c === 'string' ? shown(c, tag === 'pre') : c);
  return e;
}

const $ = (id: string) => document.getElementById(id) as HTMLElement;
const show = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));

function notice(text: string): void {
  const n = $('notice');
  n.replaceChildren(shown(text, false));
  n.hidden = text === '';
}

async function call(method: 'GET' | 'POST', route: string, body?: unknown): Promise<Json> {
  const init: RequestInit = { method, credentials: 'same-origin' };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'content-type': 'application/json' };
  }
  const r = await fetch(`api/${route}`, init);
  const data = await r.json();
  if (!r.ok) throw Object.assign(new Error(data?.error?.message ?? `HTTP ${r.status}`), { code: data?.error?.code });
  return data;
}

const q = (o: Record<string, string>) => new URLSearchParams(o).toString();

// ---- state ----------------------------------------------------------------------------------
let state: Json = { projects: [] };
// While a followed job's recorded steps are being fetched, live steps wait in `early`: shown
// at once, a live step would raise lastSeq past recorded ones still in flight, and those
// would then be dropped as already seen.
let followed: { project: string; id: string; lastSeq: number; early: Json[] | null } | null = null;

function diffView(text: string): HTMLElement {
  const pre = el('pre', { class: 'diff' });
  for (const line of text.split('\n')) pre.append(el('span', { class: line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : '' }, shown(line, true)), '\n');
  return pre;
}

function approvalCard(a: Json): HTMLElement {
  const rows: Array<[string, Child]> = [];
  const act = a.action ?? {};
  if (a.kind === 'command') {
    if (Array.isArray(act.argv)) rows.push(['command (argv)', el('pre', { 'data-testid': 'approval-argv' }, JSON.stringify(act.argv))]);
    else if (typeof act.tool === 'string') rows.push(['tool', `${act.tool} ${JSON.stringify(act.input ?? {})}`]);
    if (act.cwd) rows.push(['directory', el('span', { 'data-testid': 'approval-cwd' }, String(act.cwd))]);
    if (Array.isArray(act.changed_files)) {
      rows.push(['files changed so far', act.changed_files.length ? el('ul', { 'data-testid': 'approval-files' }, ...act.changed_files.map((f: string) => el('li', {}, f))) : el('span', { 'data-testid': 'approval-files' }, 'none')]);
    }
    if (act.unsandboxed) rows.push(['sandbox', 'NONE: it runs with your full access']);
    else if (Array.isArray(act.grants) && act.grants.length) {
      const words = act.grants.map((g: Json) => (typeof g.host === 'string' ? `network ${g.host}${g.private ? ' (private addresses too)' : ''}` : `${g.access} ${g.path}${g.secret ? ' (SECRET)' : ''}${g.scope === 'all_projects' ? ' [all projects]' : ''}`));
      rows.push(['sandbox grants', el('ul', { 'data-testid': 'approval-grants' }, ...words.map((w: string) => el('li', {}, w)))]);
    }
    if (typeof act.notice === 'string') rows.push(['warning', act.notice]);
    for (const r of Array.isArray(act.runs_changed) ? act.runs_changed : []) {
      if (typeof r?.diff === 'string' && r.diff !== '') rows.push([`what the task changed in ${String(r.path)}`, diffView(r.diff)]);
    }
  } else if (a.kind === 'write') {
    rows.push(['file', String(act.path ?? '')]);
    if (typeof act.reason === 'string') rows.push(['why it asks', act.reason]);
    if (typeof act.diff === 'string') rows.push(['the change', diffView(act.diff)]);
  } else if (a.kind === 'mcp_call') {
    rows.push(['server', String(act.server ?? '')], ['tool', String(act.tool ?? '')], ['arguments', el('pre', {}, show(act.arguments ?? {}))]);
  } else rows.push(['action', el('pre', {}, show(act))]);
  const decide = (decision: 'approve' | 'deny') => async () => {
    try {
      await call('POST', 'decide', { id: a.id, decision, digest: a.digest });
      notice(`${decision === 'approve' ? 'approved' : 'denied'} ${a.id}`);
    } catch (err) {
      notice(`${(err as Error).message}${(err as { code?: string }).code ? ` [${(err as { code?: string }).code}]` : ''}`);
    }
  };
  const approve = el('button', { type: 'button', class: 'act approve', 'data-testid': 'approve' }, 'Approve');
  const deny = el('button', { type: 'button', class: 'act deny', 'data-testid': 'deny' }, 'Deny');
  approve.addEventListener('click', decide('approve'));
  deny.addEventListener('click', decide('deny'));
  return el(
    'div',
    { class: 'approval', 'data-testid': 'approval', 'data-id': a.id, 'data-job': a.job_id },
    el('strong', {}, `${a.kind} approval `), el('code', {}, a.id), el('span', { class: 'muted' }, ` for job ${a.job_id} (${a.owner})`),
    el('dl', {}, ...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])),
    approve, deny,
  );
}

function jobRow(project: string, j: Json): HTMLElement {
  const title = j.title || (Array.isArray(j.argv) ? JSON.stringify(j.argv) : j.kind);
  const row = el(
    'div',
    { class: `job${followed?.id === j.id ? ' on' : ''}`, 'data-testid': 'job', 'data-id': j.id },
    el('span', { class: 'title' }, title),
    el('span', { class: `state ${j.state}`, 'data-testid': 'job-state' }, j.state),
    el('span', { class: 'muted' }, `${j.kind} · ${j.ceiling} · ${j.owner}`),
    el('span', { class: 'muted' }, j.created_at.slice(0, 19).replace('T', ' ')),
  );
  row.addEventListener('click', () => void follow(project, j.id).catch((e) => notice((e as Error).message)));
  return row;
}

function renderProjects(): void {
  const root = $('projects');
  root.replaceChildren();
  if (!state.projects.length) root.append(el('p', { class: 'muted' }, 'No trusted project in this profile yet (shadowcode --project DIR trust).'));
  for (const p of state.projects) {
    root.append(
      el(
        'div',
        { class: 'project', 'data-testid': 'project' },
        el('h2', {}, p.path),
        p.approvals.length ? el('h3', {}, `Waiting for you (${p.approvals.length})`) : null,
        ...p.approvals.map(approvalCard),
        el('h3', {}, 'Tasks and jobs'),
        p.jobs.length ? el('div', {}, ...p.jobs.map((j: Json) => jobRow(p.path, j))) : el('p', { class: 'muted' }, 'none yet'),
      ),
    );
  }
  const sel = $('catalog-project') as HTMLSelectElement;
  const was = sel.value;
  sel.replaceChildren(...state.projects.map((p: Json) => el('option', { value: p.path }, p.path)));
  if (was) sel.value = was;
  if (followed) {
    const job = state.projects.flatMap((p: Json) => p.jobs).find((j: Json) => j.id === followed?.id);
    if (job) renderJobHead(job);
  }
}

// ---- one job ----------------------------------------------------------------------------------
function stepView(e: Json): HTMLElement {
  const b = e.body ?? {};
  let text: string;
  if (e.kind === 'tool_call') text = `${b.name} ${b.arguments ?? ''}`;
  else if (e.kind === 'tool_result') text = `${b.name ?? ''}${b.is_error ? ' (error)' : ''}\n${show(b.content ?? '')}`;
  else if (e.kind === 'model_response') text = `${b.text ?? ''}${b.usage ? `\ntokens: ${show(b.usage)}` : ''}`;
  else if (e.kind === 'answer') text = `${b.state ?? ''}: ${b.summary ?? (b.reason ? `${b.reason.code}: ${b.reason.message}` : '')}`;
  else if (e.kind === 'output' || e.kind === 'runner.output') text = show(b.text ?? b.chunk ?? b);
  else if (e.kind === 'runner.state_changed') text = `WARNING: ${b.notice ?? ''}\n${show(b.changed ?? [])}`;
  else if (e.kind === 'protected_created' || e.kind === 'background_unwatched') text = `WARNING: ${b.notice ?? ''}`;
  else if (e.kind === 'changes_limited' || e.kind === 'changes_unobserved') text = `${b.incomplete || e.kind === 'changes_unobserved' ? 'WARNING' : 'note'}: not every change of this task is recorded: ${b.reason ?? ''}`;
  else if (e.kind === 'sandbox_blocked' || e.kind === 'sandbox_discarded' || e.kind === 'mcp.discarded') text = `${b.notice ?? ''}`;
  else if (e.kind === 'mcp.stderr') text = `server ${b.definition ?? ''} failed (${b.code ?? ''}); its stderr, last lines (secrets scrubbed):\n${Array.isArray(b.lines) ? b.lines.map((l: unknown) => `  ${String(l)}`).join('\n') : ''}${b.hint ? `\nhint: ${b.hint}` : ''}`;
  else text = JSON.stringify(b);
  return el('div', { class: 'step', 'data-testid': 'step', 'data-kind': e.kind }, el('span', { class: 'kind' }, `${e.seq} ${e.kind}`), el('pre', {}, text));
}

function renderJobHead(j: Json): void {
  const head = document.querySelector('#detail .head');
  if (!head) return;
  const answer = j.answer;
  const parts: Child[] = [
    el('h2', {}, j.title || j.id),
    el('p', {}, el('span', { class: `state ${j.state}`, 'data-testid': 'detail-state' }, j.state), ` ${j.kind} · ceiling ${j.ceiling} · owner ${j.owner} · ${j.id}`),
    answer ? el('div', { 'data-testid': 'answer' }, el('h3', {}, 'Answer'), el('pre', {}, answer.summary ?? (answer.reason ? `${answer.reason.code}: ${answer.reason.message}` : show(answer))), answer.usage ? el('p', { class: 'muted' }, `tokens: ${show(answer.usage)}`) : null) : null,
    Array.isArray(j.argv) ? el('pre', {}, JSON.stringify(j.argv)) : null,
    j.exit_code !== null && j.exit_code !== undefined ? el('p', {}, `exit code ${j.exit_code}`) : null,
    ['queued', 'running', 'waiting_approval'].includes(j.state) && followed ? cancelButton(followed.project, j.id) : null,
  ];
  head.replaceChildren(...parts.filter((p): p is Node => p instanceof Node));
}

function cancelButton(project: string, id: string): HTMLElement {
  const b = el('button', { type: 'button', class: 'act danger', 'data-testid': 'cancel' }, 'Cancel');
  b.addEventListener('click', async () => {
    b.setAttribute('disabled', '');
    try {
      const r = await call('POST', 'cancel', { project, id });
      notice(r.ended ? `job ${id} ${r.job.state}` : `cancel of ${id} requested; it is still ${r.job.state}`);
    } catch (err) {
      notice(`${(err as { code?: string }).code ?? 'error'}: ${(err as Error).message}`);
      b.removeAttribute('disabled');
    }
  });
  return b;
}

async function follow(project: string, id: string): Promise<void> {
  const mine = { project, id, lastSeq: 0, early: [] as Json[] | null };
  followed = mine;
  const d = $('detail');
  const steps = el('div', { 'data-testid': 'steps' });
  const tools = el('div', { class: 'tools' });
  d.replaceChildren(el('div', { class: 'head' }), tools, el('h3', {}, 'Steps'), steps, el('div', { 'data-testid': 'review' }));
  renderProjects();
  let data: Json;
  try {
    data = await call('GET', `job?${q({ project, id })}`);
  } catch (err) {
    release(mine, []);
    throw err;
  }
  if (followed !== mine) return;
  const job = state.projects.flatMap((p: Json) => p.jobs).find((j: Json) => j.id === id) ?? data.job;
  renderJobHead(job);
  const submitted = data.events.find((e: Json) => e.kind === 'submitted')?.body;
  if (submitted) tools.append(el('p', { 'data-testid': 'detail-mode' }, `mode ${submitted.mode ?? '-'} · model ${submitted.model ?? '-'}`));
  release(mine, data.events);
  if (data.job.kind === 'agent') {
    const review = el('button', { type: 'button', class: 'act', 'data-testid': 'review-open' }, 'Review changes');
    review.addEventListener('click', () => void showReview(project, id));
    tools.append(review);
  }
}

/** Ends the wait for recorded steps: those and the live ones that came meanwhile, in order. */
function release(mine: NonNullable<typeof followed>, recorded: Json[]): void {
  const early = mine.early ?? [];
  mine.early = null;
  if (followed === mine) for (const e of [...recorded, ...early].sort((a: Json, b: Json) => a.seq - b.seq)) addStep(e);
}

function addStep(e: Json): void {
  if (!followed) return;
  if (followed.early) {
    followed.early.push(e);
    return;
  }
  if (e.seq <= followed.lastSeq) return;
  followed.lastSeq = e.seq;
  document.querySelector('[data-testid="steps"]')?.append(stepView(e));
}

async function showReview(project: string, task: string): Promise<void> {
  const box = document.querySelector('[data-testid="review"]') as HTMLElement;
  try {
    const r = await call('GET', `review?${q({ project, task })}`);
    const files: Json[] = r.files ?? r.changes ?? [];
    const confirm = el('button', { type: 'button', class: 'act danger', 'data-testid': 'rollback-confirm', hidden: '' }, 'Yes, restore every file this task changed');
    const start = el('button', { type: 'button', class: 'act', 'data-testid': 'rollback' }, 'Roll back…');
    start.addEventListener('click', () => confirm.removeAttribute('hidden'));
    confirm.addEventListener('click', async () => {
      try {
        const done = await call('POST', 'rollback', { project, task });
        notice(`rolled back ${task}: restored ${(done.restored ?? []).join(', ')}`);
        box.replaceChildren(el('p', { 'data-testid': 'rolled-back' }, `restored ${(done.restored ?? []).length} file(s)`));
      } catch (err) {
        notice(`${(err as Error).message}`);
      }
    });
    box.replaceChildren(
      el('h3', {}, 'Changes'),
      ...files.map((f: Json) => {
        const why = el('button', { type: 'button', class: 'act', 'data-testid': 'why' }, 'why');
        const whyBox = el('div', {});
        why.addEventListener('click', async () => {
          const w = await call('GET', `why?${q({ project, path: f.path })}`);
          whyBox.replaceChildren(el('pre', { 'data-testid': 'why-out' }, show(w.changes)));
        });
        return el('div', { 'data-testid': 'review-file' }, el('strong', { 'data-testid': 'review-path' }, f.path), ' ', why, diffView(f.diff ?? show(f)), whyBox);
      }),
      files.length ? start : el('p', { class: 'muted' }, 'no file changes recorded'),
      confirm,
    );
  } catch (err) {
    box.replaceChildren(el('p', { class: 'bad' }, (err as Error).message));
  }
}

// ---- catalogs ---------------------------------------------------------------------------------
async function showCatalog(): Promise<void> {
  const project = ($('catalog-project') as HTMLSelectElement).value;
  const box = $('catalog');
  if (!project) return void box.replaceChildren(el('p', { class: 'muted' }, 'no trusted project'));
  const r = await call('GET', `catalog?${q({ project })}`);
  const defs = r.view.definitions as Json[];
  box.replaceChildren(
    el('table', {}, el('thead', {}, el('tr', {}, ...['grant', 'id', 'transport', 'target', 'hash'].map((h) => el('th', {}, h)))),
      el('tbody', {}, ...defs.map((d) => el('tr', { 'data-testid': 'definition' }, el('td', {}, d.grant.state), el('td', {}, d.id), el('td', {}, d.transport ?? 'invalid'), el('td', {}, d.executable ?? d.url ?? '-'), el('td', {}, d.hash ?? '-'))))),
    ...Object.entries(r.pins as Record<string, Json>).map(([id, pin]) => {
      const tools = el('table', {}, el('tbody', {}, ...(pin.tools ?? []).map((t: Json) => el('tr', { 'data-testid': 'tool' }, el('td', {}, t.name), el('td', { 'data-testid': 'tool-description' }, t.description ?? '')))));
      const parts: Child[] = [el('h3', {}, `${id}: pinned ${pin.pinned_hash ?? 'nothing yet'}`), tools];
      if (pin.diff) {
        const d = pin.diff;
        const lines = [...d.added.map((n: string) => `+ ${n} (new tool)`), ...d.removed.map((n: string) => `- ${n} (removed)`), ...d.changed.flatMap((c: Json) => [`~ ${c.name}: ${c.fields.join(', ')} changed`, ...(c.description ? [`  was: ${c.description.before}`, `  now: ${c.description.after}`] : [])])];
        const accept = el('button', { type: 'button', class: 'act approve', 'data-testid': 'catalog-accept' }, `Accept catalog ${pin.last_hash}`);
        accept.addEventListener('click', async () => {
          try {
            await call('POST', 'accept', { project, id, hash: pin.last_hash });
            notice(`accepted the catalog ${pin.last_hash} of ${id}`);
            await showCatalog();
          } catch (err) {
            notice((err as Error).message);
          }
        });
        parts.push(el('p', { class: 'bad' }, `The last connection saw a different catalog (${pin.last_hash}); tasks refuse this server until you accept it.`), el('pre', { 'data-testid': 'catalog-diff' }, lines.join('\n')), accept);
      } else if (pin.pinned_hash) parts.push(el('p', { class: 'ok', 'data-testid': 'catalog-match' }, 'the last connection matched the pin'));
      return el('div', { 'data-testid': 'pin', 'data-id': id }, ...parts);
    }),
  );
}

// ---- audit ------------------------------------------------------------------------------------
let auditAfter = 0;
async function showAudit(more = false): Promise<void> {
  if (!more) auditAfter = 0;
  const kind = ($('audit-kind') as HTMLInputElement).value.trim();
  const r = await call('GET', `audit?${q({ after: String(auditAfter), ...(kind ? { kind } : {}) })}`);
  const v = r.verify;
  $('audit-verify').replaceChildren(v.ok ? el('span', { class: 'ok' }, `audit chain intact: ${v.rows} rows, head ${v.head ?? '-'}`) : el('span', { class: 'bad' }, `audit chain BROKEN at row ${v.first_break?.seq} (${v.first_break?.reason})`));
  const body = document.querySelector('#audit-rows tbody') as HTMLElement;
  if (!more) body.replaceChildren();
  for (const row of r.rows) body.append(el('tr', { 'data-testid': 'audit-row' }, el('td', {}, String(row.seq)), el('td', {}, row.at), el('td', {}, row.kind), el('td', {}, el('pre', {}, show(row.body)))));
  auditAfter = r.next_after ?? auditAfter;
  $('audit-more').hidden = r.next_after === null;
}

// ---- wiring -----------------------------------------------------------------------------------
for (const b of document.querySelectorAll<HTMLButtonElement>('nav button')) {
  b.addEventListener('click', () => {
    for (const o of document.querySelectorAll('nav button')) o.classList.toggle('on', o === b);
    for (const s of document.querySelectorAll<HTMLElement>('[data-view]')) s.hidden = s.dataset.view !== b.dataset.tab;
    if (b.dataset.tab === 'catalogs') void showCatalog().catch((e) => notice((e as Error).message));
    if (b.dataset.tab === 'audit') void showAudit().catch((e) => notice((e as Error).message));
  });
}
$('catalog-project').addEventListener('change', () => void showCatalog().catch((e) => notice((e as Error).message)));
$('audit-load').addEventListener('click', () => void showAudit().catch((e) => notice((e as Error).message)));
$('audit-more').addEventListener('click', () => void showAudit(true).catch((e) => notice((e as Error).message)));

const feed = new EventSource('api/events');
feed.addEventListener('open', () => ($('live').textContent = 'live'));
feed.addEventListener('error', () => ($('live').textContent = 'reconnecting…'));
feed.addEventListener('state', (m) => {
  state = JSON.parse((m as MessageEvent).data);
  renderProjects();
});
feed.addEventListener('step', (m) => {
  const e = JSON.parse((m as MessageEvent).data);
  if (followed && e.job_id === followed.id) addStep(e);
});
