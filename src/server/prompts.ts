/* Prompts: `delegate` hands a task for the fixed project; `understand` asks for a read-only inspection. */
export interface PromptDef {
  readonly name: string;
  readonly description: string;
  readonly arguments: ReadonlyArray<{ name: string; description: string; required: boolean }>;
  render(project: string, args: Record<string, string | undefined>): string;
}

export const PROMPTS: readonly PromptDef[] = [
  {
    name: 'delegate',
    description: 'Hand a task to the shadowcode engine for the fixed project.',
    arguments: [{ name: 'task', description: 'What should be done, in plain words.', required: true }],
    render: (project, a) =>
      [
        `Work on this task in the project at ${project}, using the shadowcode tools.`,
        '',
        `Task: ${a.task ?? ''}`,
        '',
        'First read shadow_status and shadow_understand to see the project and what this connection may do.',
        'Record the task as a goal with shadow_goal (action create) and keep notes with shadow_memory.',
        'Changes need a server started with --allow-write in a trusted project; approvals are one exact action at a time.',
      ].join('\n'),
  },
  {
    name: 'understand',
    description: 'Ask for a read-only inspection of the fixed project.',
    arguments: [],
    render: (project) =>
      [
        `Inspect the project at ${project} without changing anything.`,
        'Use shadow_understand for the project map, shadow_doctor for diagnostics, shadow_goal (action list) for open goals',
        'and shadow_memory (action read) for the notes. Summarise the languages, how to build and test, and anything that needs attention.',
      ].join('\n'),
  },
];
