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
        'First read shadow_status to see what this connection may do, and shadow_models for the configured models.',
        'Start the task with shadow_run: mode "plan" for a plan (then read shadow://plan), "review" for findings, or "build" to make the change.',
        'A build task that should write files or run commands needs permission_level "workspace", on a server started with --allow-write in a trusted project.',
        'shadow_run returns a job id at once; follow the task with shadow_jobs (action events), which also shows its pending approvals and final answer.',
        'Each command the task wants to run waits for one exact approval: show the user the argv and directory, and only with their agreement call shadow_approve.',
        'When it has finished, shadow_review shows its diff, shadow_why a file\'s history, and shadow_rollback undoes the task.',
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
