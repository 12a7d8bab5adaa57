/*
 * One y/N question at the terminal. stdin flows only while a question waits
 * (resumed, one line read, paused again), so every question of a command reads
 * its own answer and an idle stdin never keeps the process alive.
 */
import type { Ctx } from './context.js';

export async function ask(ctx: Ctx, question: string): Promise<boolean> {
  ctx.io.stderr.write(question);
  const stdin = ctx.io.stdin;
  const answer = await new Promise<string>((resolve) => {
    const onEnd = () => resolve('');
    stdin.once('data', (d) => {
      stdin.off('end', onEnd);
      resolve(String(d));
    });
    stdin.once('end', onEnd);
    stdin.resume();
  });
  stdin.pause();
  return /^y(es)?\s*$/i.test(answer);
}
