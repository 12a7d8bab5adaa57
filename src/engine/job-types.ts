/*
 * The rows of jobs and approvals as every reader sees them: the engine, the CLI, the
 * servers and the library. Kept free of imports beyond the level type, so that the
 * library's published types need nothing but themselves.
 */
import type { Level } from '../ticket.js';

export type JobState = 'queued' | 'running' | 'waiting_approval' | 'succeeded' | 'failed' | 'cancelled';
export interface JobRow {
  readonly id: string;
  readonly project: string;
  readonly kind: 'test' | 'agent';
  readonly owner: string;
  readonly ceiling: Level;
  readonly state: JobState;
  readonly title: string;
  readonly task_id: string | null;
  readonly argv: string[] | null;
  readonly exit_code: number | null;
  readonly duration_ms: number | null;
  readonly created_at: string;
  readonly updated_at: string;
}
export interface ApprovalRow {
  readonly id: string;
  readonly job_id: string;
  readonly kind: 'command' | 'write' | 'mcp_call';
  readonly action: { argv?: string[]; cwd?: string; path?: string; diff?: string };
  readonly state: 'pending' | 'approved' | 'denied' | 'cancelled';
  readonly created_at: string;
  readonly decided_at: string | null;
  readonly decided_by: string | null;
}
