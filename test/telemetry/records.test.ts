/*
 * The W3C trace context as a call's recording reads and writes it (src/telemetry/records.ts),
 * the rules OpenTelemetry's propagator applies: a traceparent that is not one is no parent, a
 * caller's "not sampled" is kept, and a tracestate is passed on with its valid members only.
 */
import t from 'tap';
import { parseTraceparent, tracestate } from '../../src/telemetry/records.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

t.test('a traceparent names the caller\'s trace, span and sampling', async (t) => {
  t.same(parseTraceparent(`00-${TRACE}-${SPAN}-01`), { traceId: TRACE, spanId: SPAN, sampled: true });
  t.same(parseTraceparent(`00-${TRACE}-${SPAN}-00`), { traceId: TRACE, spanId: SPAN, sampled: false }, 'not sampled: our spans are not recorded either');
  t.same(parseTraceparent(`01-${TRACE}-${SPAN}-03-future`), { traceId: TRACE, spanId: SPAN, sampled: true }, 'a later version may carry more fields');
});

t.test('what is not a traceparent is no parent', async (t) => {
  for (const bad of [
    `ff-${TRACE}-${SPAN}-01`, // version ff is invalid
    `00-${'0'.repeat(32)}-${SPAN}-01`, // all-zero trace id
    `00-${TRACE}-${'0'.repeat(16)}-01`, // all-zero span id
    `00-${TRACE}-${SPAN}-01-extra`, // version 00 has exactly four fields
    `00-${TRACE.toUpperCase()}-${SPAN}-01`, // hex is lower case
    `00-${TRACE.slice(1)}-${SPAN}-01`,
    'not a traceparent',
  ]) t.equal(parseTraceparent(bad), undefined, bad);
});

t.test('a tracestate keeps its valid members, in order, at most 32 of them and 512 characters', async (t) => {
  t.equal(tracestate('caller=t61rcWkgMzE'), 'caller=t61rcWkgMzE');
  t.equal(tracestate(' a=1 , Bad=2, b=x=y, tenant@vendor=ok,c=3'), 'a=1,tenant@vendor=ok,c=3', 'upper-case keys and values with = are dropped');
  t.equal(tracestate(Array.from({ length: 40 }, (_, i) => `k${i}=v`).join(',')), Array.from({ length: 32 }, (_, i) => `k${i}=v`).join(','));
  t.ok((tracestate(Array.from({ length: 30 }, (_, i) => `k${i}=${'v'.repeat(30)}`).join(',')) ?? '').length <= 512);
  t.equal(tracestate(''), undefined);
  t.equal(tracestate('nothing valid'), undefined);
});
