// The relay chaos run (issue 36): paygate A, the split deployment (engine, API, worker, its sandbox unused), relaying a
// project's sandbox_card, sandbox_identity and sandbox_escrow_b to provider B, another paygate in sandbox mode (its own
// split stack and schema), through the fault proxy (chaos/fault-proxy.ts: A's upstream base_url). N mixed relayed flows
// while a kill loop SIGKILLs A's API, worker or engine, or one of B's processes (B's API sometimes down for a while),
// and a fault loop switches the proxy's fault; then a settle phase and the checks (chaos/relay-checks.ts).
import { Pool } from 'undici';
import { openDb, stuckRows } from './checks.js';
import {
  type ChaosOptions,
  type FlowPhase,
  reportTail,
  runKillLoop,
  seededRandom,
  settle,
  startFlowPhase,
  untilAnswered,
} from './driver.js';
import { type Fault, FaultProxy, type FaultKind } from './fault-proxy.js';
import { type FlowKind, type FlowRecord, type MerchantContext, type ObservedAnswer, pickKinds } from './merchant.js';
import { FlakyReceiver } from './receiver.js';
import { REFUSAL_CODES_AT_500, type RelayCheckReport, runRelayChecks, statusById } from './relay-checks.js';
import { type ProcessName, Stack } from './stack.js';

/** The relay run takes the local run's options (its flags are the same). */
export type RelayChaosOptions = ChaosOptions;

/** The relayed flows' mix: no messaging (the provider's messaging is not relayed). */
export const RELAY_FLOW_MIX: Readonly<Partial<Record<FlowKind, number>>> = {
  charge_idempotent: 22,
  charge_plain: 12,
  cancel_partial: 14,
  cancel_full: 6,
  verification: 14,
  escrow: 16,
  reserve: 8,
  schedule: 8,
};

/** The PGs of A's project that live at B. */
export const RELAYED_PGS = ['sandbox_card', 'sandbox_identity', 'sandbox_escrow_b'] as const;

/** A's processes the kill loop picks from (A's sandbox serves nothing relayed), and B's. */
const A_VICTIMS: readonly ProcessName[] = ['api', 'worker', 'engine'];
const B_VICTIMS: readonly ProcessName[] = ['api', 'api', 'worker', 'sandbox', 'engine'];

export interface RelayChaosResult {
  readonly report: RelayCheckReport;
  readonly flows: number;
  readonly kinds: Record<string, number>;
  readonly kills: Record<string, number>;
  readonly faults: Record<FaultKind, number>;
  readonly faultWindows: number;
  readonly crashes: string[];
  readonly flowSeconds: number;
  readonly settleSeconds: number;
  readonly totalSeconds: number;
  readonly retries: number;
  readonly ok: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A fault for one window of the fault loop, and the share of connections it hits. */
function pickFault(random: () => number): { fault: Fault; share: number } {
  const share = 0.3 + random() * 0.5;
  const r = random();
  if (r < 0.2) return { fault: { kind: 'latency', ms: 1_000 + Math.floor(random() * 7_000) }, share };
  // a ~700-byte answer over 1.5-4.5 minutes, each piece well within any per-read timeout: only a deadline on the
  // whole call keeps the merchant's request short
  if (r < 0.35) return { fault: { kind: 'trickle', bytes: 4, everyMs: 500 + Math.floor(random() * 1_000) }, share };
  if (r < 0.5) return { fault: { kind: 'reset' }, share };
  if (r < 0.7) return { fault: { kind: 'http5xx', status: random() < 0.5 ? 502 : 503 }, share: 1 };
  if (r < 0.85) return { fault: { kind: 'blackhole' }, share };
  return { fault: { kind: 'down' }, share: 1 };
}

export async function runRelayChaos(options: RelayChaosOptions): Promise<RelayChaosResult> {
  const log = options.log ?? (() => undefined);
  const random = seededRandom(options.seed);
  // the fault loop and the proxy draw from their own sequences, so the flows' choices stay those of the seed
  const faultRandom = seededRandom(options.seed ^ 0x5eed);
  const started = Date.now();
  const a = await Stack.open({ postgresUrl: options.postgresUrl, label: 'relaya' });
  const b = await Stack.open({ postgresUrl: options.postgresUrl, label: 'relayb' });
  const stacks = [a, b];
  options.onStack?.({
    killAll: () => {
      for (const s of stacks) s.killAll();
    },
    close: async () => {
      await Promise.all(stacks.map((s) => s.close()));
    },
  });
  let hardTimer: NodeJS.Timeout | undefined;
  const hardTimeout = new Promise<never>((_, reject) => {
    hardTimer = setTimeout(() => {
      for (const s of stacks) s.killAll();
      reject(
        new Error(`the relay chaos run passed its hard timeout of ${options.hardTimeoutMs / 1000} s; every process was killed`),
      );
    }, options.hardTimeoutMs);
  });
  const receiver = await FlakyReceiver.start(options.flakyFraction, random);
  const proxy = await FaultProxy.start({ host: '127.0.0.1', port: b.ports.api }, { random: seededRandom(options.seed ^ 0xfa17) });
  const poolA = new Pool(a.apiUrl, { connections: Math.max(16, options.concurrency * 2) });
  const poolB = new Pool(b.apiUrl, { connections: Math.max(8, options.concurrency) });
  try {
    return await Promise.race([hardTimeout, run()]);
  } catch (err) {
    // a run that failed before its report (a setup call refused for a minute, the hard timeout): what each API and
    // worker said last is the only clue left once the processes are gone
    for (const [name, stack] of [
      ['A', a],
      ['B', b],
    ] as const) {
      for (const line of stack.errorLines) log(`${name}'s error log: ${line}`);
      for (const process of ['api', 'worker'] as const) log(`${name}'s ${process}, last output:\n${stack.outputTail(process)}`);
    }
    throw err;
  } finally {
    clearTimeout(hardTimer);
    for (const s of stacks) s.killAll();
    await proxy.close().catch(() => undefined);
    await poolA.close().catch(() => undefined);
    await poolB.close().catch(() => undefined);
    await receiver.close().catch(() => undefined);
    await Promise.all(stacks.map((s) => s.close()));
  }

  async function run(): Promise<RelayChaosResult> {
    for (const [name, stack] of [
      ['B', b],
      ['A', a],
    ] as const) {
      for (const process of ['engine', 'sandbox', 'api', 'worker'] as const) {
        await stack.start(process);
        log(`started ${name}'s ${process} (pid ${stack.pid(process)})`);
      }
    }
    // ---- A's project (webhooks to the merchant's receiver), B's project (notifications to A), the route A -> proxy -> B
    const atA = await untilAnswered(poolA, `Bearer ${a.adminToken}`, 'POST', '/admin/v1/projects', {
      name: 'relay chaos',
      webhook_url: receiver.url,
    });
    const applicationId = atA.application_id as string;
    const atB = await untilAnswered(poolB, `Bearer ${b.adminToken}`, 'POST', '/admin/v1/projects', {
      name: 'relay chaos provider',
      webhook_url: `${a.apiUrl}/upstream/v1/notifications/${applicationId}`,
    });
    const providerApplicationId = atB.application_id as string;
    await untilAnswered(poolA, `Bearer ${a.adminToken}`, 'PUT', `/admin/v1/projects/${applicationId}/upstream`, {
      base_url: proxy.url,
      client_key: atB.client_key,
      secret_key: atB.secret_key,
      pgs: RELAYED_PGS,
    });
    const basic = (p: Record<string, unknown>) =>
      `Basic ${Buffer.from(`${p.client_key as string}:${p.secret_key as string}`).toString('base64')}`;
    const auth = basic(atA);
    const issued = await untilAnswered(poolA, auth, 'POST', '/v2/request/subscribe', {
      pg: 'sandbox_card',
      method: '카드자동(REST)',
      subscription_id: `relay-chaos-${options.seed}`,
      order_name: 'relay chaos',
      card_no: '4111111111111111',
      card_pw: '12',
      card_identity_no: '900101',
      card_expire_year: '30',
      card_expire_month: '12',
    });
    log(`A's project ${applicationId} relays ${RELAYED_PGS.join(', ')} to B's ${providerApplicationId} through ${proxy.url}`);

    // ---- the flows, the kill loop and the fault loop, at once
    const kinds = pickKinds(options.flows, random, RELAY_FLOW_MIX);
    const flows: FlowRecord[] = kinds.map((kind, index) => ({ index, kind, orderIds: [], retries: 0 }));
    const answers: ObservedAnswer[] = [];
    /** when A's API was not there: from its kill until it listened again */
    const apiDown: { from: number; to: number }[] = [];
    const ctx: MerchantContext = {
      pool: poolA,
      auth,
      billingKey: issued.billing_key as string,
      random,
      // relayed flows wait out faults and B's downtime too: 3 s a flow (a merchant retries each call until then)
      deadline: Date.now() + Math.max(600_000, options.flows * 3_000),
      // the spec's refusals at 500 are final for a merchant: one told about an outage ends refused (and is counted)
      finalAt5xx: REFUSAL_CODES_AT_500,
      pgSide: { pool: poolB, auth: basic(atB) },
      escrowPg: 'sandbox_escrow_b',
      buyerDecisions: true,
      onAnswer: (o) => answers.push(o),
    };
    const phase = startFlowPhase(ctx, flows, { concurrency: options.concurrency, kills: options.kills, log });
    const faultLoop = runFaultLoop(phase);
    const kills: Record<string, number> = {};
    const crashes: string[] = [];
    const noteCrashes = async () => {
      for (const [name, stack] of [
        ['A', a],
        ['B', b],
      ] as const) {
        for (const c of stack.crashed())
          crashes.push(`${name}'s ${c.name} exited on its own (code ${c.code}): ${c.output.slice(-500)}`);
        for (const restarted of await stack.restartExited()) log(`restarted ${name}'s ${restarted}, which had exited on its own`);
      }
    };
    await runKillLoop(phase, options.kills, random, noteCrashes, async (killCount) => {
      const atProvider = random() < 0.35;
      const victims = atProvider ? B_VICTIMS : A_VICTIMS;
      const victim = victims[Math.floor(random() * victims.length)]!;
      const stack = atProvider ? b : a;
      const label = `${atProvider ? 'B' : 'A'}'s ${victim}`;
      const killedAt = Date.now();
      await stack.kill9(victim);
      kills[label] = (kills[label] ?? 0) + 1;
      // B's API down for a while, now and then: A's calls meet a closed port
      const downMs = atProvider && victim === 'api' && random() < 0.5 ? 5_000 + Math.floor(random() * 15_000) : 0;
      if (downMs > 0) await sleep(downMs);
      await stack.start(victim);
      if (!atProvider && victim === 'api') apiDown.push({ from: killedAt, to: Date.now() });
      log(
        `kill ${killCount}: ${label} SIGKILLed at ${phase.done}/${flows.length} flows, back in ${Date.now() - killedAt} ms${downMs ? ` (kept down ${downMs} ms)` : ''}`,
      );
    });
    const faultWindows = await faultLoop;
    const flowSeconds = (phase.finishedAt! - phase.startedAt) / 1000;
    log(`flows done in ${flowSeconds.toFixed(0)} s; settling (at most ${options.settleMs / 1000} s)`);

    // ---- settle: nothing in flight at A, and B's notifications to A delivered
    const settleStart = Date.now();
    const dbA = await openDb(a.databaseUrl);
    const dbB = await openDb(b.databaseUrl);
    try {
      await settle(options.settleMs, log, async () => {
        await noteCrashes();
        const atAStuck = await stuckRows(dbA);
        const atBStuck = await stuckRows(dbB);
        // B's orders whose buyer decided: B's sandbox PG redelivers its notification to B for a couple of minutes
        const ordersAtB = await statusById(dbB, 'escrow_orders', providerApplicationId);
        const undecided = flows.filter(
          (f) =>
            f.escrowDecision !== undefined && f.receiptId !== undefined && ordersAtB.get(f.receiptId) !== f.escrowDecision.status,
        ).length;
        // A's orders follow B's through B's notifications, or A's follow-up asks (5 s doubling to a minute) when a
        // notification could not be checked at B then
        const ordersAtA = await statusById(dbA, 'escrow_orders', applicationId);
        const behind = [...ordersAtA].filter(([id, status]) => ordersAtB.get(id) !== status).length;
        return {
          ...Object.fromEntries(Object.entries(atAStuck).map(([k, n]) => [`A: ${k}`, n])),
          'B: receipts in status 0': atBStuck['receipts in status 0']!,
          'B: deliveries not done': atBStuck['deliveries not done']!,
          "B: escrow orders not at the buyer's decision": undecided,
          "A: escrow orders not at B's status": behind,
        };
      });
    } finally {
      await dbA.end().catch(() => undefined);
      await dbB.end().catch(() => undefined);
    }
    const settleSeconds = (Date.now() - settleStart) / 1000;
    const report = await runRelayChecks({
      relay: { databaseUrl: a.databaseUrl, engineAddress: a.engineAddress, applicationId },
      provider: {
        databaseUrl: b.databaseUrl,
        engineAddress: b.engineAddress,
        applicationId: providerApplicationId,
        sandboxUrl: b.sandboxUrl,
        sandboxToken: b.sandboxToken,
      },
      flows,
      answers,
      apiDown,
      receiver: receiver.log,
    });
    for (const [name, stack] of [
      ['A', a],
      ['B', b],
    ] as const)
      for (const line of stack.errorLines) log(`${name}'s error log: ${line}`);
    const kindCounts: Record<string, number> = {};
    for (const k of kinds) kindCounts[k] = (kindCounts[k] ?? 0) + 1;
    return {
      report,
      flows: flows.length,
      kinds: kindCounts,
      kills,
      faults: { ...proxy.applied },
      faultWindows,
      crashes,
      flowSeconds,
      settleSeconds,
      totalSeconds: (Date.now() - started) / 1000,
      retries: flows.reduce((s, f) => s + f.retries, 0),
      ok: Object.values(report.counts).every((n) => n === 0) && crashes.length === 0,
    };
  }

  /** Fault windows of 3-12 s on the proxy, 3-12 s apart, until the flows are done; then no fault. Answers the windows. */
  async function runFaultLoop(phase: FlowPhase): Promise<number> {
    let windows = 0;
    const done = phase.finished.then(() => true);
    const wait = (ms: number) => Promise.race([sleep(ms).then(() => false), done]);
    try {
      while (!(await wait(3_000 + faultRandom() * 9_000))) {
        const { fault, share } = pickFault(faultRandom);
        await proxy.set(fault, share);
        windows++;
        log(`fault ${windows}: ${JSON.stringify(fault)} on ${Math.round(share * 100)} % of A's connections to B`);
        if (await wait(3_000 + faultRandom() * 9_000)) break;
        await proxy.set({ kind: 'none' });
      }
    } finally {
      await proxy.set({ kind: 'none' });
    }
    return windows;
  }
}

/** The result as the table `npm run chaos -- --relay` prints. */
export function formatRelayResult(r: RelayChaosResult, options: Pick<RelayChaosOptions, 'seed' | 'flakyFraction'>): string {
  const c = r.report.counts;
  const list = (o: Record<string, number>) =>
    Object.entries(o)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
  const lines = [
    `relay chaos: ${r.flows} relayed flows (${list(r.kinds)}), seed ${options.seed}`,
    `kills: ${Object.values(r.kills).reduce((s, n) => s + n, 0)} (${list(r.kills)}); ` +
      `receiver fails ${Math.round(options.flakyFraction * 100)} % of first arrivals only`,
    `faults: ${r.faultWindows} windows; A's connections to B: ${list(r.faults)}`,
    `time: flows ${r.flowSeconds.toFixed(0)} s, settle ${r.settleSeconds.toFixed(0)} s, total ${r.totalSeconds.toFixed(0)} s; merchant retries ${r.retries}`,
    '',
    '| check | count |',
    '|---|---|',
    `| stuck at A (not final after settle, or the merchant gave up) | ${c.stuck} |`,
    `| lost (told it succeeded, missing or not final at A or B) | ${c.lost} |`,
    `| charged more than once at B (or paid there without a charge) | ${c.duplicatedAtProvider} |`,
    `| cancels not applied exactly once at B | ${c.cancelMismatch} |`,
    `| receipts at A not matching B's (status, price, cancelled_price) | ${c.receiptMismatch} |`,
    `| escrow orders at A not at B's status | ${c.escrowMismatch} |`,
    `| duplicated webhooks (one event under two webhook-ids) | ${c.duplicatedWebhooks} |`,
    `| webhook deliveries never accepted | ${c.webhooksLost} |`,
    `| answers not JSON with a catalog code | ${c.answersWithoutCode} |`,
    `| non-final answers without a way to learn the outcome | ${c.nonFinalWithoutHint} |`,
    `| valid requests answered with a refusal (2405, 2411, 2701) | ${c.refusalsOfValidRequests} |`,
    `| no answer from a running API (empty reply, timeout) | ${c.noAnswer} |`,
    `| failed workflows (A and B) | ${c.failedWorkflows} |`,
    `| flows refused | ${c.refused} |`,
    ...reportTail(r.report, r.crashes),
  ];
  lines.push('', r.ok ? 'relay chaos: OK' : 'relay chaos: VIOLATIONS');
  return lines.join('\n');
}
