/*
 * The native tools a task offers the model. Plan and Review get the reading
 * tools and finish; Build gets them all, and the gate still decides each call.
 * Input schemas are schemas/agent-tools/<name>.schema.json, served as written.
 */
import { AGENT_TOOL_SCHEMAS } from '../../../gen/tools/agent-catalog.js';
import type { TaskMode, ToolSpec } from '../types.js';
import { editFile } from './edit-file.js';
import { finishTool } from './finish.js';
import { listDir } from './list-dir.js';
import { readFile } from './read-file.js';
import { runCommandTool } from './run-command.js';
import { searchText } from './search-text.js';
import type { NativeTool } from './types.js';
import { writeFile } from './write-file.js';

export const NATIVE_TOOLS: ReadonlyMap<string, NativeTool<any>> = new Map(
  [readFile, listDir, searchText, writeFile, editFile, runCommandTool, finishTool].map((t) => [t.name, t]),
);

/** The tools a task in this mode may call. */
export function offeredTools(mode: TaskMode): NativeTool<any>[] {
  return [...NATIVE_TOOLS.values()].filter((t) => mode === 'build' || !t.writes);
}

/** The provider-neutral spec of a native tool: its schema without our metadata keys. */
export function toolSpec(tool: NativeTool<any>): ToolSpec {
  const { $schema: _s, $id: _i, title: _t, description, ...input } = AGENT_TOOL_SCHEMAS[tool.name as keyof typeof AGENT_TOOL_SCHEMAS];
  return { name: tool.name, description: description as string, input_schema: input };
}
