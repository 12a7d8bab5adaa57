/* How the telemetry commands show a TelemetryView to a person (--json prints the view itself). */
import type { TelemetryView } from '../../ops/telemetry.js';
import { inert } from '../../util/inert-text.js';

export function telemetryText(v: TelemetryView): string {
  const lines = [`telemetry ${v.state}: ${inert(v.why)}`];
  if (v.service_name !== null) lines.push(`service   ${inert(v.service_name)}`);
  for (const t of v.targets) {
    const headers = t.header_names.length ? `, headers ${t.header_names.map(inert).join(', ')}` : '';
    lines.push(`${t.signal.padEnd(9)} ${inert(t.url)} (${t.protocol}, ${t.loopback ? 'this machine' : 'REMOTE: leaves this machine'}${headers})`);
  }
  for (const h of v.profile?.headers ?? []) lines.push(`header    ${inert(h.name)} from secret ${inert(h.secret)}`);
  if (v.state === 'on') lines.push(`content   ${v.content ? 'exported, scrubbed of secrets: tool arguments and results, prompts, model text' : 'not exported (tool arguments and results, prompts, model text); telemetry set --content opts in'}`);
  for (const p of v.processes) {
    const c = (n: string, s: { exported: number; dropped: number; failed: number }) => `${n} ${s.exported} sent, ${s.dropped} dropped, ${s.failed} failed`;
    lines.push(`pid ${p.pid}${p.running ? ' (running)' : ''}: ${c('spans', p.traces)}; ${c('logs', p.logs)}; ${c('metric exports', p.metrics)}${p.last_error ? `; last error: ${inert(p.last_error)}` : ''}`);
  }
  return lines.join('\n');
}
