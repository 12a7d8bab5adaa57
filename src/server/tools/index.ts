/* The native tools this server offers, in the order tools/list shows them. */
import { shadowDoctor } from './doctor.js';
import { shadowGoal } from './goal.js';
import { shadowMemory } from './memory.js';
import { shadowModels } from './models.js';
import { shadowSessions } from './sessions.js';
import { shadowSqlite } from './sqlite.js';
import { shadowStatus } from './status.js';
import { shadowTools } from './tools.js';
import type { ToolDef } from './types.js';
import { shadowUnderstand } from './understand.js';

export const TOOLS: ReadonlyMap<string, ToolDef<any>> = new Map(
  [shadowStatus, shadowModels, shadowSessions, shadowTools, shadowUnderstand, shadowDoctor, shadowMemory, shadowSqlite, shadowGoal].map((t) => [t.name, t]),
);
