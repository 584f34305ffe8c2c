/**
 * The kill -9 chaos suite (issue 13): API, worker, engine and sandbox PGs as separate processes on Postgres (a
 * schema of the run's own, dropped at the end), N mixed merchant flows, and a random process SIGKILLed and
 * restarted at random moments. Prints the checks' counts; exits 1 on any violation.
 *
 *   npm run chaos -- --flows 1000 --kills 20 [--seed N] [--concurrency 12] [--settle 420]
 *   DATABASE_URL=postgres://... npm run chaos      # default postgres://postgres@127.0.0.1:5432/test
 *   npm run chaos -- --relay [--flows 1000 ...]    # relayed flows: paygate in front of a provider (chaos/relay.ts)
 */
import { parseArgs } from 'node:util';
import { formatResult, runChaos } from './driver.js';
import { formatRelayResult, runRelayChaos } from './relay.js';

const { values } = parseArgs({
  options: {
    flows: { type: 'string', short: 'n' },
    kills: { type: 'string' },
    seed: { type: 'string' },
    concurrency: { type: 'string' },
    settle: { type: 'string' },
    timeout: { type: 'string' },
    flaky: { type: 'string' },
    relay: { type: 'boolean' },
  },
});
const int = (v: string | undefined, fallback: number, what: string) => {
  const n = Number(v ?? fallback);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${what} must be a non-negative integer`);
  return n;
};
const flows = int(values.flows, 1000, 'flows');
const kills = int(values.kills, 20, 'kills');
const seed = int(values.seed, Math.floor(Math.random() * 1_000_000), 'seed');
const options = {
  flows,
  kills,
  seed,
  concurrency: int(values.concurrency, 12, 'concurrency'),
  // reconciles need the 45 s call window and the 15 s sweep; a delivery claimed by a killed worker waits out its 60 s lease
  settleMs: int(values.settle, 420, 'settle') * 1000,
  hardTimeoutMs: int(values.timeout, 3600, 'timeout') * 1000,
  flakyFraction: Number(values.flaky ?? 0.2),
  postgresUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
};

let stack: { killAll(): void; close(): Promise<void> } | undefined;
process.on('exit', () => stack?.killAll());
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stack?.killAll();
    // the processes are gone; the schema and the run's directory are dropped if that takes less than 5 s
    const closed = stack?.close() ?? Promise.resolve();
    void Promise.race([closed, new Promise((r) => setTimeout(r, 5_000))]).finally(() => {
      process.stderr.write(`chaos: ${signal}, every process killed\n`);
      process.exit(130);
    });
  });
}

const t0 = Date.now();
const log = (line: string) => process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);
const onStack = (s: { killAll(): void; close(): Promise<void> }) => {
  stack = s;
};
log(
  `${values.relay ? 'relay chaos' : 'chaos'}: ${flows} flows, ${kills} kills, seed ${seed}, ${options.concurrency} merchants at once`,
);
try {
  if (values.relay) {
    const result = await runRelayChaos({ ...options, log, onStack });
    process.stdout.write(`\n${formatRelayResult(result, options)}\n`);
    process.exitCode = result.ok ? 0 : 1;
  } else {
    const result = await runChaos({ ...options, log, onStack });
    process.stdout.write(`\n${formatResult(result, options)}\n`);
    process.exitCode = result.ok ? 0 : 1;
  }
} catch (err) {
  process.stderr.write(`chaos: the run failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
}
