// The chaos run: the split stack (chaos/stack.ts), N mixed merchant flows (chaos/merchant.ts) driven while a kill
// loop SIGKILLs a random process at random moments and starts it again, a settle phase that waits (bounded) until
// nothing is left in flight, then the checks (chaos/checks.ts). Every process it started is SIGKILLed at the end,
// on an error and on the hard timeout.
import { Pool } from 'undici';
import { type CheckReport, openDb, runChecks, stuckRows } from './checks.js';
import { driveFlow, type FlowRecord, type MerchantContext, pickKinds, request } from './merchant.js';
import { FlakyReceiver } from './receiver.js';
import { PROCESS_NAMES, type ProcessName, Stack } from './stack.js';

export interface ChaosOptions {
  readonly flows: number;
  readonly kills: number;
  readonly seed: number;
  /** merchants calling at once */
  readonly concurrency: number;
  /** the longest the settle phase waits for nothing to be in flight */
  readonly settleMs: number;
  /** everything is killed and the run fails after this long */
  readonly hardTimeoutMs: number;
  /** the share of webhook first arrivals the receiver answers 500 */
  readonly flakyFraction: number;
  readonly postgresUrl: string;
  readonly log?: (line: string) => void;
  /** registers the stack's synchronous kill-everything (exit handlers) and its cleanup (signal handlers) */
  readonly onStack?: (stack: { killAll(): void; close(): Promise<void> }) => void;
}

export interface ChaosResult {
  readonly report: CheckReport;
  readonly flows: number;
  readonly kills: Record<ProcessName, number>;
  /** processes that exited without being killed (restarted; a finding) */
  readonly crashes: string[];
  readonly flowSeconds: number;
  readonly settleSeconds: number;
  readonly totalSeconds: number;
  readonly retries: number;
  readonly kinds: Record<string, number>;
  readonly faultsArmed: number;
  /** every count 0 and no crash */
  readonly ok: boolean;
}

/** mulberry32: a small seeded generator, so a run's choices can be replayed with --seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const log = options.log ?? (() => undefined);
  const random = seededRandom(options.seed);
  const started = Date.now();
  const stack = await Stack.open({ postgresUrl: options.postgresUrl });
  options.onStack?.({ killAll: () => stack.killAll(), close: () => stack.close() });
  let hardTimer: NodeJS.Timeout | undefined;
  const hardTimeout = new Promise<never>((_, reject) => {
    hardTimer = setTimeout(() => {
      stack.killAll();
      reject(new Error(`the chaos run passed its hard timeout of ${options.hardTimeoutMs / 1000} s; every process was killed`));
    }, options.hardTimeoutMs);
  });
  const receiver = await FlakyReceiver.start(options.flakyFraction, random);
  const pool = new Pool(stack.apiUrl, { connections: Math.max(16, options.concurrency * 2) });
  try {
    return await Promise.race([hardTimeout, run()]);
  } finally {
    clearTimeout(hardTimer);
    stack.killAll();
    await pool.close().catch(() => undefined);
    await receiver.close().catch(() => undefined);
    await stack.close();
  }

  async function run(): Promise<ChaosResult> {
    for (const name of PROCESS_NAMES) {
      await stack.start(name);
      log(`started ${name} (pid ${stack.pid(name)})`);
    }
    // ---- a project whose webhook_url and message webhook point at the receiver, and a billing key
    const setupCall = (method: 'POST' | 'PUT', path: string, auth: string, body?: unknown) =>
      untilAnswered(pool, auth, method, path, body);
    const project = await setupCall('POST', '/admin/v1/projects', `Bearer ${stack.adminToken}`, {
      name: 'chaos',
      webhook_url: receiver.url,
    });
    const applicationId = project.application_id as string;
    const auth = `Basic ${Buffer.from(`${project.client_key as string}:${project.secret_key as string}`).toString('base64')}`;
    const issued = await setupCall('POST', '/v2/request/subscribe', auth, {
      pg: 'sandbox_card',
      method: '카드자동(REST)',
      subscription_id: `chaos-${options.seed}`,
      order_name: 'chaos',
      card_no: '4111111111111111',
      card_pw: '12',
      card_identity_no: '900101',
      card_expire_year: '30',
      card_expire_month: '12',
    });
    await setupCall('PUT', '/message/alimtalk/webhook', auth, { url: receiver.url });
    // answers the PG executes but never sends: the charges and cancels they hit settle by reconciliation
    const faultsArmed = Math.max(1, Math.floor(options.flows / 200));
    for (const operation of ['charge', 'cancel'])
      await setupCall('POST', '/sandbox/v1/faults', auth, {
        pg: 'sandbox_card',
        operation,
        fault: 'lost_response',
        count: faultsArmed,
      });
    log(`project ${applicationId} ready; ${faultsArmed} lost_response faults armed on charge and on cancel`);

    // ---- the flows and the kill loop, at once
    const kinds = pickKinds(options.flows, random);
    const flows: FlowRecord[] = kinds.map((kind, index) => ({ index, kind, orderIds: [], retries: 0 }));
    const ctx: MerchantContext = {
      pool,
      auth,
      billingKey: issued.billing_key as string,
      random,
      // a merchant keeps retrying for this long (an in-flight Idempotency-Key is taken over after 90 s)
      deadline: Date.now() + Math.max(600_000, options.flows * 1_000),
    };
    const phase = startFlowPhase(ctx, flows, { concurrency: options.concurrency, kills: options.kills, log });
    const kills: Record<ProcessName, number> = { engine: 0, sandbox: 0, api: 0, worker: 0 };
    const crashes: string[] = [];
    const noteCrashes = async () => {
      for (const c of stack.crashed()) crashes.push(`${c.name} exited on its own (code ${c.code}): ${c.output.slice(-500)}`);
      for (const name of await stack.restartExited()) log(`restarted ${name}, which had exited on its own`);
    };
    await runKillLoop(phase, options.kills, random, noteCrashes, async (killCount) => {
      const victim = PROCESS_NAMES[Math.floor(random() * PROCESS_NAMES.length)]!;
      await stack.kill9(victim);
      kills[victim]++;
      const t0 = Date.now();
      await stack.start(victim);
      log(`kill ${killCount}: ${victim} SIGKILLed at ${phase.done}/${flows.length} flows, back in ${Date.now() - t0} ms`);
    });
    const flowSeconds = (phase.finishedAt! - phase.startedAt) / 1000;
    log(`flows done in ${flowSeconds.toFixed(0)} s; settling (at most ${options.settleMs / 1000} s)`);

    // ---- settle: bounded wait until nothing is in flight (reconciles need the 45 s call window + the 15 s sweep)
    const settleStart = Date.now();
    const db = await openDb(stack.databaseUrl);
    try {
      await settle(options.settleMs, log, async () => {
        await noteCrashes();
        return stuckRows(db);
      });
    } finally {
      await db.end().catch(() => undefined);
    }
    const settleSeconds = (Date.now() - settleStart) / 1000;
    const report = await runChecks(
      {
        databaseUrl: stack.databaseUrl,
        sandboxUrl: stack.sandboxUrl,
        sandboxToken: stack.sandboxToken,
        engineAddress: stack.engineAddress,
        applicationId,
      },
      flows,
      receiver.log,
    );
    const kindCounts: Record<string, number> = {};
    for (const k of kinds) kindCounts[k] = (kindCounts[k] ?? 0) + 1;
    return {
      report,
      flows: flows.length,
      kills,
      crashes,
      flowSeconds,
      settleSeconds,
      totalSeconds: (Date.now() - started) / 1000,
      retries: flows.reduce((s, f) => s + f.retries, 0),
      kinds: kindCounts,
      faultsArmed,
      ok: Object.values(report.counts).every((n) => n === 0) && crashes.length === 0,
    };
  }
}

/** A setup call retried every second (the processes may still be starting) until a 2xx, for at most a minute. */
export async function untilAnswered(
  pool: Pool,
  auth: string,
  method: 'POST' | 'PUT',
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  for (let i = 0; ; i++) {
    const answer = await request(pool, auth, method, path, body).catch(() => undefined);
    if (answer && answer.status < 300) return answer.body;
    if (i >= 60)
      throw new Error(`${method} ${path}: ${answer ? `HTTP ${answer.status} ${JSON.stringify(answer.body)}` : 'no answer'}`);
    await sleep(1_000);
  }
}

/** The flow phase under way: `concurrency` merchants driving the flows one after the other. */
export interface FlowPhase {
  readonly flows: readonly FlowRecord[];
  readonly startedAt: number;
  /** flows with a final answer (or given up) */
  done: number;
  /** set when the last flow ended */
  finishedAt?: number;
  readonly finished: Promise<void>;
}

/**
 * Starts the merchants on the flows. The flows are spread over at least 8 s per kill, so every kill lands among
 * requests in flight (a small run would otherwise be over before the first restart). Logs progress every 20 s.
 */
export function startFlowPhase(
  ctx: MerchantContext,
  flows: FlowRecord[],
  options: { readonly concurrency: number; readonly kills: number; readonly log: (line: string) => void },
): FlowPhase {
  const { log } = options;
  let next = 0;
  const minFlowMs = options.kills * 8_000;
  const inFlight = new Set<FlowRecord>();
  const progress = setInterval(() => {
    const slow = [...inFlight].slice(0, 6);
    log(
      `${phase.done}/${flows.length} flows done, ${inFlight.size} in flight${slow.length ? `; e.g. ${slow.map((f) => `#${f.index} ${f.kind} (${f.current})`).join('; ')}` : ''}`,
    );
  }, 20_000);
  const startedAt = Date.now();
  const finished = Promise.all(
    Array.from({ length: Math.min(options.concurrency, flows.length) }, async () => {
      while (next < flows.length) {
        const flow = flows[next++]!;
        const notBefore = startedAt + (flow.index / flows.length) * minFlowMs;
        if (Date.now() < notBefore) await sleep(notBefore - Date.now());
        inFlight.add(flow);
        await driveFlow(ctx, flow);
        inFlight.delete(flow);
        phase.done++;
        if (phase.done % 100 === 0) log(`${phase.done}/${flows.length} flows done`);
      }
    }),
  ).then(() => {
    phase.finishedAt = Date.now();
    clearInterval(progress);
  });
  const phase: FlowPhase = { flows, startedAt, done: 0, finished };
  return phase;
}

/**
 * Kills `kills` times at random moments spread over the flow phase (the gap: the flows' remaining time over the
 * kills left), then waits for the flows; `beforeKill` runs before each kill and every 1-3 s once all are done.
 */
export async function runKillLoop(
  phase: FlowPhase,
  kills: number,
  random: () => number,
  beforeKill: () => Promise<void>,
  kill: (killNumber: number) => Promise<void>,
): Promise<void> {
  const minFlowMs = kills * 8_000;
  let killCount = 0;
  while (killCount < kills || phase.finishedAt === undefined) {
    let gap: number;
    if (phase.finishedAt === undefined) {
      const elapsed = Date.now() - phase.startedAt;
      const progress = phase.done / phase.flows.length;
      const remaining = progress > 0.05 ? (elapsed / progress) * (1 - progress) : Math.max(minFlowMs - elapsed, 20_000);
      const left = Math.max(1, kills - killCount);
      gap = Math.min(20_000, Math.max(1_500, (remaining / (left + 1)) * (0.5 + random())));
    } else {
      gap = 1_000 + random() * 2_000;
    }
    await Promise.race([sleep(gap), killCount >= kills ? phase.finished : new Promise(() => undefined)]);
    await beforeKill();
    if (killCount >= kills) continue;
    killCount++;
    await kill(killCount);
  }
  await phase.finished;
}

/** Polls `pending` every 5 s until every figure is 0 or `settleMs` passed; logs what is still pending. */
export async function settle(
  settleMs: number,
  log: (line: string) => void,
  pending: () => Promise<Record<string, number>>,
): Promise<void> {
  const settleStart = Date.now();
  for (;;) {
    const left = Object.entries(await pending()).filter(([, n]) => n > 0);
    if (left.length === 0 || Date.now() - settleStart > settleMs) return;
    log(`settling: ${left.map(([k, n]) => `${k} ${n}`).join(', ')}`);
    await sleep(5_000);
  }
}

/** The result as the table `npm run chaos` prints. */
export function formatResult(r: ChaosResult, options: Pick<ChaosOptions, 'seed' | 'flakyFraction'>): string {
  const c = r.report.counts;
  const lines = [
    `chaos: ${r.flows} flows (${Object.entries(r.kinds)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}), seed ${options.seed}`,
    `kills: ${Object.values(r.kills).reduce((s, n) => s + n, 0)} (${Object.entries(r.kills)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}); lost_response faults armed: ${r.faultsArmed} charge + ${r.faultsArmed} cancel; ` +
      `receiver fails ${Math.round(options.flakyFraction * 100)} % of first arrivals only`,
    `time: flows ${r.flowSeconds.toFixed(0)} s, settle ${r.settleSeconds.toFixed(0)} s, total ${r.totalSeconds.toFixed(0)} s; merchant retries ${r.retries}`,
    '',
    '| check | count |',
    '|---|---|',
    `| stuck (not final) | ${c.stuck} |`,
    `| lost (PG charged, no paid receipt) | ${c.lost} |`,
    `| duplicated (charged twice, or paid without a PG charge) | ${c.duplicated} |`,
    `| refunds not matching the PG | ${c.refundMismatch} |`,
    `| webhook deliveries never accepted | ${c.webhooksLost} |`,
    `| failed workflows | ${c.failedWorkflows} |`,
    `| flows refused | ${c.refused} |`,
    ...reportTail(r.report, r.crashes),
  ];
  lines.push('', r.ok ? 'chaos: OK (0 stuck, 0 lost, 0 duplicated)' : 'chaos: VIOLATIONS');
  return lines.join('\n');
}

/** The table's last row (crashes), then the details, the examples and the crashes' output. */
export function reportTail(
  report: { readonly details: Record<string, number>; readonly examples: readonly string[] },
  crashes: readonly string[],
): string[] {
  const lines = [
    `| processes crashed on their own | ${crashes.length} |`,
    '',
    ...Object.entries(report.details).map(([k, n]) => `  ${k}: ${n}`),
  ];
  if (report.examples.length) lines.push('', 'examples:', ...report.examples.map((e) => `  ${e}`));
  if (crashes.length) lines.push('', 'crashes:', ...crashes.map((e) => `  ${e}`));
  return lines;
}
