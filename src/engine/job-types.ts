/*
 * The rows of jobs and approvals as every reader sees them: the engine, the CLI, the
 * servers and the library. Kept free of imports beyond plain types, so that the
 * library's published declarations need nothing but themselves.
 */
import type { CommandApproval } from '../../gen/types/command-approval.js';
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
  /** A command's CommandApproval (argv, cwd, changed_files, runs_changed, notice); a write's path, rule and diff; a call's server, tool and arguments. */
  readonly action: Partial<CommandApproval> & { path?: string; diff?: string; rule?: string };
  readonly state: 'pending' | 'approved' | 'denied' | 'cancelled';
  readonly created_at: string;
  readonly decided_at: string | null;
  readonly decided_by: string | null;
}
