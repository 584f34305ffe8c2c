// The API process's event-loop delay over a measurement, read off its own /metrics: prom-client's Node.js metrics
// sample the loop with perf_hooks.monitorEventLoopDelay and reset the histogram at every scrape, so a scrape before a
// measurement starts a fresh window and one after reads it. What blocks the loop for tens of milliseconds shows here
// as the max and p99, which a one-caller p99 then repeats (issue 39: the tails).
import type { Target } from './paygate-calls.js';

export interface LoopDelay {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

async function scrape(admin: Target): Promise<string> {
  const res = await admin.pool.request({ method: 'GET', path: '/metrics', headers: { authorization: admin.auth } });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`/metrics: HTTP ${res.statusCode}`);
  return text;
}

const gauge = (text: string, name: string): number => {
  const match = new RegExp(`^paygate_nodejs_eventloop_lag_${name}_seconds(?:\\{[^}]*\\})? ([\\d.e+-]+)$`, 'm').exec(text);
  return match ? Number(match[1]) * 1000 : Number.NaN;
};

/** Runs `measured` between two scrapes of the API's /metrics and returns the loop's delay in between. */
export async function withLoopDelay<T>(admin: Target, measured: () => Promise<T>): Promise<{ result: T; delay: LoopDelay }> {
  await scrape(admin);
  const result = await measured();
  const text = await scrape(admin);
  return { result, delay: { p50Ms: gauge(text, 'p50'), p99Ms: gauge(text, 'p99'), maxMs: gauge(text, 'max') } };
}
