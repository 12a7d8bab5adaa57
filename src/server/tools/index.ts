/* The native tools this server offers, in the order tools/list shows them. */
import { shadowApprove } from './approve.js';
import { shadowCheckpoint } from './checkpoint.js';
import { shadowDoctor } from './doctor.js';
import { shadowGoal } from './goal.js';
import { shadowJobs } from './jobs.js';
import { shadowMemory } from './memory.js';
import { shadowModels } from './models.js';
import { shadowReview } from './review.js';
import { shadowRollback } from './rollback.js';
import { shadowRun } from './run.js';
import { shadowSessions } from './sessions.js';
import { shadowSqlite } from './sqlite.js';
import { shadowStatus } from './status.js';
import { shadowTest } from './test.js';
import { shadowTools } from './tools.js';
import type { ToolDef } from './types.js';
import { shadowUnderstand } from './understand.js';
import { shadowWhy } from './why.js';

export const TOOLS: ReadonlyMap<string, ToolDef<any>> = new Map(
  [
    shadowStatus, shadowModels, shadowSessions, shadowTools, shadowUnderstand, shadowDoctor, shadowMemory, shadowSqlite, shadowGoal,
    shadowRun, shadowJobs, shadowApprove, shadowTest, shadowReview, shadowWhy, shadowCheckpoint, shadowRollback,
  ].map((t) => [t.name, t]),
);
