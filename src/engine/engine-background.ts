/*
 * Background processes with an explicitly independent lifetime: started by a
 * task (a dev server, a watcher), they outlive the task and its owner's socket,
 * and stay in this list until a task stops them or the engine stops.
 *
 *   start(job, argv) ─► gate background:start (the job's ceiling: read-only tasks
 *   are refused) ─► cap engine.background_processes ─► the task's change watch
 *   opened (or looked at) first ─► own process group, in the job's project,
 *   sanitised environment, no terminal ─► listed
 *   stop(id, job)   ─► gate background:stop ─► TERM to the group, grace, KILL ─► reaped
 *                      ─► the starting task's watch looks, while the task runs
 *   ends by itself  ─► background_exited ─► the same look
 *   stopAll()       ─► the engine is closing: every group, then wait for each leader
 *
 * What a background process changes is a change of the task that started it, seen
 * at each look of that task's watch (its approvals, after its commands, when the
 * process stops or ends, at the task's end). After the task ended nothing it changes
 * is recorded (the task's end event says which processes still run).
 *
 * The leader is never reaped before its group has been signalled, so a late
 * signal cannot reach a reused pid.
 */
import type { ChildProcess } from 'node:child_process';
import { ScError } from '../errors.js';
import { enforce, type GateEnv } from '../policy/gate.js';
import { backgroundRequest, trustOf } from '../policy/requests.js';
import { getProject } from '../store/projects.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { newId } from '../util/ids.js';
import { childEnv } from './child-env.js';
import type { Policy } from '../policy/load.js';
import type { Db } from '../store/db.js';
import { startDirect } from './spawn/index.js';
import { betweenCause, observeJob, openWatchOf } from './change-watch.js';
import { addEvent, getJob, type JobRow } from './job-events.js';

export interface BackgroundEntry {
  readonly id: string;
  readonly project: string;
  readonly argv: string[];
  readonly pid: number;
  readonly started_at: string;
  readonly job_id: string;
  readonly owner: string;
}

interface Held {
  readonly entry: BackgroundEntry;
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    /* the group is gone */
  }
}

/** Starts one background process as the leader of its own group, in the sandbox (network only when the project has it). */
export function spawnBackground(ticket: GateTicket, spec: { argv: string[]; cwd: string; env: Record<string, string>; network: boolean; policy: Policy; db: Db }): ChildProcess {
  assertTicket(ticket, 'background:start');
  return startDirect(ticket, {
    kind: 'background', argv: spec.argv, cwd: spec.cwd, env: spec.env, stdio: 'ignore',
    confine: { project: spec.cwd, network: spec.network }, trustedArgv: false, policy: spec.policy, db: spec.db,
  }).child;
}

export class Background {
  private readonly held = new Map<string, Held>();

  constructor(private readonly gate: GateEnv, private readonly env: NodeJS.ProcessEnv) {}

  private request(action: 'background:start' | 'background:stop', job: JobRow, id: string, args?: Record<string, unknown>) {
    return backgroundRequest(action, job, trustOf(this.gate.db(), job.project), id, args);
  }

  list(): BackgroundEntry[] {
    return [...this.held.values()].map((h) => h.entry);
  }

  /** A task with at least workspace authority starts a process that outlives it. */
  async start(job: JobRow, argv: string[]): Promise<BackgroundEntry> {
    const id = newId('bg');
    const L = this.gate.policy.limits.engine;
    return enforce(this.gate, this.request('background:start', job, id, { argv }), async (t) => {
      if (this.held.size >= L.background_processes) throw new ScError('SC_LIMIT_REACHED', `${this.held.size} background processes are running, the most the engine keeps`);
      const db = this.gate.db();
      // The baseline comes first, so everything the process writes is after it.
      observeJob(this.gate, job, { id: job.id, jobId: job.id, project: job.project }, betweenCause(db, job.id));
      let child: ChildProcess;
      try {
        child = spawnBackground(t, { argv, cwd: job.project, env: childEnv(this.gate.policy.environment, this.env), network: getProject(db, job.project).network, policy: this.gate.policy, db });
      } catch (err) {
        if (err instanceof ScError) throw err;
        throw new ScError('SC_BAD_VALUE', `cannot start ${JSON.stringify(argv[0])}: ${(err as Error).message}`);
      }
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', (err) => reject(new ScError('SC_BAD_VALUE', `cannot start ${JSON.stringify(argv[0])}: ${err.message}`)));
      });
      const entry: BackgroundEntry = { id, project: job.project, argv, pid: child.pid as number, started_at: new Date().toISOString(), job_id: job.id, owner: job.owner };
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      this.held.set(id, { entry, child, exited });
      // Ending by itself also ends its listing; the rest of its group is not left behind.
      void exited.then(() => {
        signalGroup(entry.pid, 'SIGKILL');
        if (this.held.delete(id)) {
          addEvent(this.gate.db(), job.id, 'background_exited', { id });
          this.look(entry);
        }
      });
      addEvent(this.gate.db(), job.id, 'background_started', { id, argv, pid: entry.pid });
      return entry;
    });
  }

  private async kill(h: Held): Promise<void> {
    signalGroup(h.entry.pid, 'SIGTERM');
    const timer = setTimeout(() => signalGroup(h.entry.pid, 'SIGKILL'), this.gate.policy.limits.ownership.kill_grace_ms);
    // Deleted first: the exit above then leaves the event and the look to the stopper.
    this.held.delete(h.entry.id);
    await h.exited;
    clearTimeout(timer);
    signalGroup(h.entry.pid, 'SIGKILL');
  }

  /** The starting task's watch looks, if the task still has one: what the process changed is the task's. */
  private look(entry: BackgroundEntry): void {
    try {
      const db = this.gate.db();
      const task = getJob(db, entry.job_id);
      if (!task || !openWatchOf(db, entry.job_id)) return;
      observeJob(this.gate, task, { id: task.id, jobId: task.id, project: task.project }, { via: 'background', why: `changed while the task's background process ${entry.id} ${JSON.stringify(entry.argv)} ran` });
    } catch (err) {
      addEvent(this.gate.db(), entry.job_id, 'changes_unobserved', { reason: (err as Error).message });
    }
  }

  /** Stopping needs the same authority as starting; any task of the project with it may stop one. */
  async stop(id: string, job: JobRow): Promise<BackgroundEntry> {
    return enforce(this.gate, this.request('background:stop', job, id), async () => {
      const h = this.held.get(id);
      if (!h || h.entry.project !== job.project) throw new ScError('SC_JOB_NOT_FOUND', `no background process ${JSON.stringify(id)} in this project`);
      await this.kill(h);
      addEvent(this.gate.db(), job.id, 'background_stopped', { id });
      if (job.id !== h.entry.job_id) addEvent(this.gate.db(), h.entry.job_id, 'background_stopped', { id, by: job.id });
      this.look(h.entry);
      return h.entry;
    });
  }

  async stopAll(): Promise<number> {
    const all = [...this.held.values()];
    await Promise.all(all.map((h) => this.kill(h)));
    return all.length;
  }
}
