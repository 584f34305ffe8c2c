/**
 * The upgrade check (issue 26): a DATA_DIR (and database) written by an older release, left with one open process of
 * every kind, is opened by this checkout's `npm start`, and every one of those processes completes.
 *
 *   npx tsx tools/upgrade-check.ts --from <git-ref> [--database-url postgres://postgres@127.0.0.1:5432/test]
 *   npm run upgrade:check -- --from <git-ref> [--database-url ...]
 *
 * 1. The old release is checked out from this repository's history into a temporary git worktree, with this
 *    checkout's node_modules linked into it (the check stops when package-lock.json differs: the old release would
 *    run on dependencies it was not built with).
 * 2. It runs as `npm start` does (src/main.ts: API, worker, embedded engine, in-process sandbox PGs) in sandbox mode,
 *    on a fresh DATA_DIR and, with --database-url, a fresh database `upgrade_<random>` on that server.
 * 3. Over HTTP it is left with: a verification awaiting its OTP, an escrow order shipped and waiting for the buyer, a
 *    reserve due tomorrow, a monthly schedule whose period 2 is a month away, and webhook deliveries (the message
 *    webhook's test send, the project's escrow and schedule notifications) on the retry ladder's 5-minute rung
 *    after a receiver answered 500 twice.
 * 4. It is stopped (SIGTERM, SIGKILL after a grace period) and this checkout starts on the same DATA_DIR, port and
 *    database. It confirms the OTP, plays the buyer, lets the receiver answer 200 and advances the sandbox clock
 *    past the reserve, the retry rung and period 2; then checks every outcome, one line each.
 * 5. Whatever happens: both releases and their engines killed, the worktree removed, the temporary directory and
 *    the database dropped. Exit 0 when every check passed, 1 on a failed check, 2 when the check could not run.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, realpath, rm, symlink } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify, stripVTControlCharacters } from 'node:util';
import { Client as TemporalClient, Connection, WorkflowNotFoundError } from '@temporalio/client';
// CommonJS: its namespaces come through the default export under Node's ESM loader
import proto from '@temporalio/proto';
import pg from 'pg';
import { ENGINE_TOKEN_FILE } from '../src/platform/config/engine-token.js';
import { temporalTransportOptions } from '../src/platform/temporal/transport.js';
import { freePort, ROOT, startProcess } from './child-processes.js';

const run = promisify(execFile);

/** How long a release may take to answer /health: the engine, the workflow bundle and the worker on a busy machine. */
const START_TIMEOUT_MS = 300_000;
/** SIGTERM, then SIGKILL after this: the API's own grace is 10 s, the engine's 5 s. */
const STOP_GRACE_MS = 30_000;
/** The bound of every wait for a state (an OTP in the inbox, a delivery's second attempt, a charge). */
const WAIT_MS = 120_000;
const DAY_S = 86_400;

// ---- output and checks -------------------------------------------------------------------------------------------

const t0 = Date.now();
const log = (line: string) => process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}
const checks: CheckResult[] = [];

/** Records and prints one check. */
function check(name: string, ok: boolean, detail: string): boolean {
  checks.push({ name, ok, detail });
  log(`${ok ? 'ok  ' : 'FAIL'} ${name}: ${detail}`);
  return ok;
}

/** Runs one step of the new release's part; an error in it is a failed check, and the run goes on. */
async function step(what: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    check(what, false, (err as Error).message);
  }
}

/** A reason the check cannot run at all (a bad ref, another lock file): said in one line, without a stack. */
class CannotRun extends Error {}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` every 500 ms until it returns a value; throws after `timeoutMs`, naming what it last saw. */
async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = WAIT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err instanceof Error ? err.message : err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? ` (${last})` : ''}`);
    await sleep(500);
  }
}

// ---- cleanup: everything this run made is recorded here as it is made, and undone in reverse ----------------------

const cleanups: { what: string; fn: () => Promise<unknown> }[] = [];
let cleanedUp: Promise<void> | undefined;

function cleanup(): Promise<void> {
  cleanedUp ??= (async () => {
    for (const { what, fn } of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        log(`cleanup: ${what} failed: ${(err as Error).message}`);
      }
    }
  })();
  return cleanedUp;
}

// Ctrl-C or a kill of this script: the releases must not outlive it, nor the worktree and database stay behind.
let interrupted: string | undefined;
async function exitInterrupted(signal: string): Promise<never> {
  await cleanup();
  log(`upgrade check interrupted by ${signal}: everything it started is stopped and removed`);
  process.exit(130);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = signal;
    log(`${signal}: cleaning up`);
    void exitInterrupted(signal);
  });
}

// ---- processes: a release is src/main.ts and the engine it spawns ------------------------------------------------

/** A process by pid and start time (field 22 of /proc/PID/stat), so a pid reused meanwhile is never signalled. */
interface ProcessId {
  readonly pid: number;
  readonly startTime: string;
}

/** Fields 3 on of /proc/PID/stat (state first); the command name (field 2) may hold spaces. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

const startTimeOf = (pid: number) => statFields(pid)?.[19];

/** Whether that very process still runs (a zombie has ended: only its parent's wait is missing). */
function alive(id: ProcessId): boolean {
  const fields = statFields(id.pid);
  return fields !== undefined && fields[0] !== 'Z' && fields[19] === id.startTime;
}

/** What a process runs, for the report: its command line, shortened. */
function describe(pid: number): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    return `${pid} ${argv.map((a) => a.replace(/^.*\/(?=[^/]+$)/, '')).join(' ')}`.slice(0, 120);
  } catch {
    return String(pid);
  }
}

/** The live descendants of a process (Linux /proc): the release's engine, which must not be orphaned. */
function descendantsOf(pid: number): ProcessId[] {
  const found: ProcessId[] = [];
  const visit = (parent: number) => {
    let tasks: string[] = [];
    try {
      tasks = readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    } catch {
      return;
    }
    for (const child of tasks.map(Number)) {
      const startTime = startTimeOf(child);
      if (startTime === undefined) continue;
      found.push({ pid: child, startTime });
      visit(child);
    }
  };
  visit(pid);
  return found;
}

/** SIGKILLs those of `ids` that still run; what they were. */
function killSurvivors(ids: readonly ProcessId[]): string[] {
  const killed: string[] = [];
  for (const id of ids.filter(alive)) {
    const what = describe(id.pid);
    try {
      process.kill(id.pid, 'SIGKILL');
      killed.push(what);
    } catch {
      // it ended meanwhile
    }
  }
  return killed;
}

interface Release {
  readonly name: string;
  readonly child: ChildProcess;
  /** everything the process wrote to stdout and stderr */
  readonly output: string[];
  /** its descendants, noted while it runs: a SIGKILLed release's engine is found here */
  readonly descendants: ProcessId[];
}

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/** Notes the release's current descendants beside those already known. */
function noteDescendants(release: Release): void {
  if (!running(release.child) || !release.child.pid) return;
  for (const id of descendantsOf(release.child.pid))
    if (!release.descendants.some((d) => d.pid === id.pid && d.startTime === id.startTime)) release.descendants.push(id);
}

/** Stops a release: SIGTERM and its graceful shutdown, SIGKILL after the grace period; then no descendant is left. */
async function stopRelease(release: Release, graceMs = STOP_GRACE_MS): Promise<string> {
  const { child } = release;
  noteDescendants(release);
  let how = 'had already exited';
  if (running(child)) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const inTime = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)]);
    if (inTime) how = `exited on SIGTERM (${child.exitCode ?? child.signalCode})`;
    else {
      child.kill('SIGKILL');
      await exited;
      how = `did not exit within ${graceMs / 1000} s of SIGTERM: SIGKILLed`;
    }
  }
  // The engine stops with its parent's shutdown, or within a second of its death (it watches its ppid), and an
  // esbuild service ends when its parent's pipe closes: give them 3 s, then make sure, by pid and start time, that
  // nothing the release spawned is left.
  const deadline = Date.now() + (graceMs > 0 ? 3_000 : 0);
  while (Date.now() < deadline && release.descendants.some(alive)) await sleep(200);
  const killed = killSurvivors(release.descendants);
  return killed.length ? `${how}; still running 3 s later and SIGKILLed: ${killed.join('; ')}` : how;
}

const releases: Release[] = [];

/** Starts `<root>/src/main.ts` as `npm start` runs it (node with tsx) and waits until /health answers 200. */
async function startRelease(name: string, root: string, env: NodeJS.ProcessEnv, port: number): Promise<Release> {
  let release: Release | undefined;
  const healthy = async () => {
    const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(5_000) });
    await res.arrayBuffer();
    return res.status === 200;
  };
  const onSpawn = (child: ChildProcess) => {
    const spawned: Release = { name, child, output: [], descendants: [] };
    release = spawned;
    releases.push(spawned);
    cleanups.push({ what: `stopping the ${name} release`, fn: () => stopRelease(spawned, 0) });
    child.stdout?.on('data', (chunk: Buffer) => spawned.output.push(chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => spawned.output.push(chunk.toString()));
    // an engine's pid is only known while its parent lives: note it as it appears, in case the parent is SIGKILLed
    const watch = setInterval(() => noteDescendants(spawned), 1_000);
    watch.unref();
    child.once('exit', () => clearInterval(watch));
  };
  // The entry is an absolute path, so the old release's own files run (its import.meta.url locates its engine and
  // workflows); the working directory does not matter to paygate, which is given an absolute DATA_DIR.
  await startProcess(join(root, 'src/main.ts'), [], env, healthy, { timeoutMs: START_TIMEOUT_MS, onSpawn });
  return release!;
}

/**
 * The error and fatal lines (pino levels 50, 60) of a release's JSON log, any line about a failed workflow task or
 * nondeterminism (the SDK warns of those: a replay of an old history that the new code does not match), and
 * anything that is not JSON and mentions an error.
 */
function errorLines(release: Release): string[] {
  const replay = /nondetermin|workflow task failed|failing workflow task/i;
  // the SDK core's own lines are coloured
  const lines = stripVTControlCharacters(release.output.join(''))
    .split('\n')
    .filter((line) => {
      if (!line.trim()) return false;
      if (replay.test(line)) return true;
      try {
        return ((JSON.parse(line) as { level?: number }).level ?? 0) >= 50;
      } catch {
        return /error/i.test(line);
      }
    });
  // a replay failure first: it explains the errors that follow it
  return [...lines.filter((l) => replay.test(l)), ...lines.filter((l) => !replay.test(l))];
}

// ---- the webhook receiver --------------------------------------------------------------------------------------

/** A local receiver for every webhook of the run: 500 while `failing`, 200 after. Loopback is allowed in sandbox mode. */
class Receiver {
  failing = true;
  /** every arrival: path, webhook-id, what was answered */
  readonly arrivals: { path: string; id: string; answered: number }[] = [];
  private constructor(
    private readonly server: Server,
    readonly base: string,
  ) {}

  static async start(): Promise<Receiver> {
    let receiver: Receiver | undefined;
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const answered = receiver!.failing ? 500 : 200;
        receiver!.arrivals.push({ path: req.url ?? '', id: String(req.headers['webhook-id'] ?? ''), answered });
        res.writeHead(answered).end(answered === 200 ? 'ok' : 'failing on purpose');
      });
    });
    server.keepAliveTimeout = 1_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new Receiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return receiver;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

// ---- the HTTP client -------------------------------------------------------------------------------------------

// biome-ignore lint/suspicious/noExplicitAny: API answers are read field by field
type Json = Record<string, any>;
interface Answer {
  readonly status: number;
  readonly body: Json;
}

class Api {
  auth = '';
  constructor(readonly base: string) {}

  /**
   * One call, retried with the same Idempotency-Key while the answer is temporary (a network error, 9409, 9503,
   * 429), as a merchant would: a release that has just started may still be warming its worker up. At the deadline
   * the last temporary answer is the answer (a workflow that never answers is a finding, not a harness error).
   */
  async call(method: string, path: string, body?: unknown, auth = this.auth, timeoutMs = WAIT_MS): Promise<Answer> {
    const headers: Record<string, string> = { authorization: auth };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method === 'POST' && !path.startsWith('/admin/')) headers['idempotency-key'] = `upgrade-${randomUUID()}`;
    const deadline = Date.now() + timeoutMs;
    let last: Answer | Error;
    for (;;) {
      try {
        const res = await fetch(`${this.base}${path}`, {
          method,
          headers,
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          // an advance of the sandbox clock, or a workflow call, answers within 60 s
          signal: AbortSignal.timeout(90_000),
        });
        const text = await res.text();
        let parsed: Json;
        try {
          parsed = (text ? JSON.parse(text) : {}) as Json;
        } catch {
          parsed = { text: text.slice(0, 200) };
        }
        last = { status: res.status, body: parsed };
        if (!(res.status === 429 || parsed.code === 9409 || parsed.code === 9503)) return last;
      } catch (err) {
        last = err as Error;
      }
      if (Date.now() > deadline) {
        if (last instanceof Error) throw new Error(`${method} ${path}: ${last.message}`);
        return last;
      }
      await sleep(1_000);
    }
  }

  /** A call that must succeed (2xx): its body, or an error naming the answer. */
  async ok(method: string, path: string, body?: unknown, auth = this.auth): Promise<Json> {
    const answer = await this.call(method, path, body, auth);
    if (answer.status >= 300) throw new Error(`${method} ${path}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  }
}

// ---- what the old release leaves open ------------------------------------------------------------------------------

interface OpenProcesses {
  readonly adminAuth: string;
  readonly applicationId: string;
  readonly verification: { receiptId: string; otp: string };
  readonly escrowReceiptId: string;
  readonly reserveId: string;
  readonly scheduleId: string;
  /** the schedule's period 2 due time, from the old release */
  readonly period2DueAt: string;
  /** the message webhook's test delivery and the project's deliveries, each on the retry ladder */
  readonly messageDeliveryId: string;
  readonly projectDeliveryIds: string[];
}

/** ISO 8601 in Asia/Seoul (+09:00), as paygate writes its times. */
const kst = (ms: number) => `${new Date(ms + 9 * 3_600_000).toISOString().slice(0, 19)}+09:00`;

async function createProject(api: Api, adminAuth: string, receiver: Receiver) {
  const project = await api.ok(
    'POST',
    '/admin/v1/projects',
    { name: 'upgrade check', webhook_url: `${receiver.base}/project` },
    adminAuth,
  );
  api.auth = `Basic ${Buffer.from(`${project.client_key}:${project.secret_key}`).toString('base64')}`;
  return project.application_id as string;
}

async function issueBillingKey(api: Api): Promise<string> {
  const issued = await api.ok('POST', '/v2/request/subscribe', {
    pg: 'sandbox_card',
    method: '카드자동(REST)',
    subscription_id: 'upgrade-check',
    order_name: 'upgrade check',
    card_no: '4111111111111111',
    card_pw: '12',
    card_identity_no: '900101',
    card_expire_year: '30',
    card_expire_month: '12',
  });
  return issued.billing_key as string;
}

/** A verification whose OTP was read from the sandbox inbox but not confirmed. */
async function openVerification(api: Api) {
  const phone = '01055550026';
  const requested = await api.ok('POST', '/v2/request/authentication', {
    pg: 'sandbox_identity',
    method: '본인인증',
    order_name: 'upgrade check',
    authentication_id: `upgrade-${randomBytes(4).toString('hex')}`,
    username: '홍길동',
    identity_no: '9001011',
    phone,
    carrier: 'SKT',
  });
  const otp = await waitFor('the OTP in the sandbox inbox', async () => {
    const inbox = await api.ok('GET', `/sandbox/v1/sms?phone=${phone}`);
    return (inbox.list as { otp?: string }[])[0]?.otp;
  });
  return { receiptId: requested.receipt_id as string, otp, status: requested.status as number };
}

/** An escrow payment whose shipping started: the order waits for the buyer (status 3). */
async function openEscrow(api: Api): Promise<string> {
  const paid = await api.ok('POST', '/sandbox/v1/payments', {
    pg: 'sandbox_escrow_b',
    price: 10_000,
    order_id: `upgrade-escrow-${randomBytes(4).toString('hex')}`,
    order_name: 'upgrade check',
    escrow: true,
  });
  const receiptId = paid.receipt_id as string;
  await api.ok('PUT', `/v2/escrow/shipping/start/${receiptId}`, { tracking_number: '1234567890', delivery_corp: 'CJ대한통운' });
  return receiptId;
}

async function openProcesses(api: Api, adminAuth: string, receiver: Receiver): Promise<OpenProcesses> {
  const applicationId = await createProject(api, adminAuth, receiver);
  const billingKey = await issueBillingKey(api);
  await api.ok('PUT', '/message/alimtalk/webhook', { url: `${receiver.base}/message` });
  log(`project ${applicationId} with a billing key; webhook_url and the message webhook point at the receiver (answering 500)`);

  const verification = await openVerification(api);
  log(`verification ${verification.receiptId}: status ${verification.status}, OTP read from the inbox, not confirmed`);

  const escrowReceiptId = await openEscrow(api);
  log(`escrow order ${escrowReceiptId}: shipping started, waiting for the buyer`);

  // The sandbox clock is the stack's time: "tomorrow" is tomorrow on it, not on this machine's clock.
  const now = new Date((await api.ok('GET', '/sandbox/v1/clock')).now as string).getTime();
  const reserve = await api.ok('POST', '/v2/subscribe/payment/reserve', {
    billing_key: billingKey,
    order_id: `upgrade-reserve-${randomBytes(4).toString('hex')}`,
    order_name: 'upgrade check reserve',
    price: 3_000,
    reserve_execute_at: kst(now + DAY_S * 1000),
    feedback_url: `${receiver.base}/feedback`,
  });
  log(`reserve ${reserve.reserve_id}: due at ${reserve.reserve_execute_at}`);

  // period 1 is charged at once (start_at defaults to now); period 2 is a month away
  const schedule = await api.ok('POST', '/v2/subscribe/schedules', {
    billing_key: billingKey,
    order_name: 'upgrade check schedule',
    price: 2_000,
    interval: 'month',
  });
  const scheduleId = schedule.schedule_id as string;
  const afterPeriod1 = await waitFor('period 1 of the schedule charged', async () => {
    const s = await api.ok('GET', `/v2/subscribe/schedules/${scheduleId}`);
    return s.charges_made === 1 ? s : undefined;
  });
  log(`schedule ${scheduleId}: period 1 charged, period 2 due at ${afterPeriod1.next_charge_at}`);

  const test = await api.ok('POST', '/message/alimtalk/webhook/test');
  const messageDeliveryId = test.delivery_id as string;
  // Two failed attempts (at once, then the 5 s rung) put every delivery on the 5-minute rung: a timer the engine
  // must keep across the upgrade, with no attempt in flight while the old release stops.
  const projectDeliveries = await waitFor('every delivery failed twice and waiting on the retry ladder', async () => {
    const message = (await api.ok('GET', '/message/alimtalk/webhook/deliveries?limit=100')).list as Json[];
    const project = (
      await api.ok('GET', `/admin/v1/projects/${applicationId}/webhook/deliveries?limit=100`, undefined, adminAuth)
    ).list as Json[];
    const events = new Set(project.map((d) => d.event));
    // the escrow order's status change (3) and the schedule's SUBSCRIPTION_CHARGED of period 1
    if (events.size < 2 || !message.some((d) => d.delivery_id === messageDeliveryId)) return undefined;
    const onLadder = (d: Json) => d.status === 'ready' && (d.attempts as Json[]).length >= 2;
    return [...message, ...project].every(onLadder) ? project : undefined;
  });
  log(
    `deliveries on the retry ladder: message ${messageDeliveryId} and project ${projectDeliveries.map((d) => `${d.delivery_id} (${d.event})`).join(', ')}`,
  );

  return {
    adminAuth,
    applicationId,
    verification: { receiptId: verification.receiptId, otp: verification.otp },
    escrowReceiptId,
    reserveId: reserve.reserve_id as string,
    scheduleId,
    period2DueAt: afterPeriod1.next_charge_at as string,
    messageDeliveryId,
    projectDeliveryIds: projectDeliveries.map((d) => d.delivery_id as string),
  };
}

// ---- what the new release must complete ----------------------------------------------------------------------------

async function completeVerification(api: Api, open: OpenProcesses): Promise<void> {
  const { receiptId, otp } = open.verification;
  const confirmed = await api.call('POST', '/v2/authenticate/confirm', { receipt_id: receiptId, otp });
  check(
    'verification confirmed with the OTP the old release sent',
    confirmed.status === 200 && confirmed.body.status === 12,
    `HTTP ${confirmed.status}, status ${confirmed.body.status ?? `- (${confirmed.body.code} ${confirmed.body.message})`}`,
  );
  const certificate = await api.call('GET', `/v2/certificate/${receiptId}`);
  check(
    'verification certificate: status verified',
    certificate.status === 200 &&
      certificate.body.status === 12 &&
      typeof certificate.body.authenticate_data?.unique === 'string',
    `HTTP ${certificate.status}, status ${certificate.body.status ?? certificate.body.code}`,
  );
}

async function completeEscrow(api: Api, open: OpenProcesses): Promise<void> {
  const id = open.escrowReceiptId;
  const sent = await api.call('POST', `/sandbox/v1/escrow/${id}/events`, { event: 'purchase_confirmed' });
  check('escrow buyer event accepted', sent.status === 202, `HTTP ${sent.status} ${JSON.stringify(sent.body)}`);
  // the PG's notification reaches the workflow as a signal: wait for the receipt to show it
  const receipt = await waitFor('the escrow order confirmed', async () => {
    const r = await api.ok('GET', `/v2/receipt/${id}`);
    return r.escrow_data?.status === 1 ? r : undefined;
  }).catch(async () => api.ok('GET', `/v2/receipt/${id}`));
  check(
    'escrow order confirmed by the buyer',
    receipt.escrow_data?.status === 1 && typeof receipt.escrow_data?.receipt_confirmed_at === 'string',
    `escrow_data ${JSON.stringify(receipt.escrow_data)}`,
  );
}

/** Advances the sandbox clock an hour past period 2: the 5-minute webhook rung, the reserve and the period come due. */
async function advanceClock(api: Api, open: OpenProcesses): Promise<void> {
  const to = kst(new Date(open.period2DueAt).getTime() + 3_600_000);
  // the operator's: one clock for every project of the installation, moved with the admin token
  const advanced = await api.ok('POST', '/sandbox/v1/clock/advance', { to }, open.adminAuth);
  log(`sandbox clock advance answered: now ${advanced.now}, settled ${advanced.settled}`);
  // Unsettled, the advance carries on; it fires each timer once the work before it has settled, so a workflow that
  // never settles holds the clock (and everything due after it) back: say so, rather than only the collateral.
  const now = async () => (await api.ok('GET', '/sandbox/v1/clock')).now as string;
  const reached = await waitFor(`the sandbox clock at ${to}`, async () => {
    const at = await now();
    return new Date(at) >= new Date(to) ? at : undefined;
  }).catch(now);
  check('sandbox clock advanced an hour past period 2', new Date(reached) >= new Date(to), `now ${reached}, asked for ${to}`);
}

async function checkReserve(api: Api, open: OpenProcesses): Promise<void> {
  const reserve = await waitFor('the reserve paid', async () => {
    const r = await api.ok('GET', `/v2/subscribe/payment/reserve/${open.reserveId}`);
    return r.status === 'paid' || r.status === 'failed' ? r : undefined;
  }).catch(() => api.ok('GET', `/v2/subscribe/payment/reserve/${open.reserveId}`));
  const receipt = reserve.receipt_id ? await api.ok('GET', `/v2/receipt/${reserve.receipt_id}`) : undefined;
  check(
    'reserve executed with a receipt',
    reserve.status === 'paid' && receipt?.status === 1,
    `status ${reserve.status}, receipt ${reserve.receipt_id ?? '-'} (status ${receipt?.status ?? '-'})${reserve.error_code ? `, error ${reserve.error_code}` : ''}`,
  );
}

async function checkSchedule(api: Api, open: OpenProcesses): Promise<void> {
  const charges = await waitFor('period 2 of the schedule charged', async () => {
    const list = (await api.ok('GET', `/v2/subscribe/schedules/${open.scheduleId}/charges`)).list as Json[];
    return list.find((c) => c.period === 2 && c.status === 'paid') ? list : undefined;
  }).catch(async () => (await api.ok('GET', `/v2/subscribe/schedules/${open.scheduleId}/charges`)).list as Json[]);
  const period2 = charges.find((c) => c.period === 2);
  check(
    'schedule period 2 charged',
    period2?.status === 'paid' && typeof period2.receipt_id === 'string',
    `periods ${charges.map((c) => `${c.period}: ${c.status}`).join(', ')}`,
  );
  const schedule = await api.ok('GET', `/v2/subscribe/schedules/${open.scheduleId}`);
  check(
    'schedule still active with period 3 ahead',
    schedule.status === 'active' && schedule.charges_made === 2,
    `status ${schedule.status}, charges_made ${schedule.charges_made}, next ${schedule.next_charge_at}`,
  );
}

/** Every delivery the old release left on the ladder is done: its failed attempts then a 200, under one id. */
async function checkDeliveries(api: Api, open: OpenProcesses, receiver: Receiver): Promise<void> {
  const list = async () => [
    ...((await api.ok('GET', '/message/alimtalk/webhook/deliveries?limit=100')).list as Json[]),
    ...((await api.ok('GET', `/admin/v1/projects/${open.applicationId}/webhook/deliveries?limit=100`, undefined, open.adminAuth))
      .list as Json[]),
  ];
  const wanted = [open.messageDeliveryId, ...open.projectDeliveryIds];
  const deliveries = await waitFor('the pending deliveries delivered', async () => {
    const all = await list();
    return wanted.every((id) => all.find((d) => d.delivery_id === id)?.status === 'done') ? all : undefined;
  }).catch(list);
  for (const id of wanted) {
    const d = deliveries.find((x) => x.delivery_id === id);
    const attempts = ((d?.attempts ?? []) as Json[]).map((a) => a.http_status ?? a.error ?? '?');
    const arrivals = receiver.arrivals.filter((a) => a.id === id).map((a) => a.answered);
    check(
      `delivery ${d?.event ?? id} delivered after its pending retry`,
      d?.status === 'done' && attempts.length >= 3 && attempts.at(-1) === 200 && attempts.slice(0, -1).every((s) => s === 500),
      `${id}: status ${d?.status ?? 'missing'}, attempts ${attempts.join(' → ')}, receiver saw ${arrivals.join(' → ')}`,
    );
  }
  // what the new release sent on its own (escrow status 1, period 2, the reserve's feedback) arrived too
  const others = deliveries.filter((d) => !wanted.includes(d.delivery_id));
  check(
    'deliveries made by the new release delivered',
    others.length >= 3 && others.every((d) => d.status === 'done'),
    others.map((d) => `${d.event} ${d.status}`).join(', ') || 'none',
  );
}

/** The verification's 30-minute lookup window closed during the advance: its timer ran on the new release. */
async function checkVerificationWindow(api: Api, open: OpenProcesses): Promise<void> {
  const certificate = await api.call('GET', `/v2/certificate/${open.verification.receiptId}`);
  check(
    'verification lookup window closed by its timer',
    certificate.body.code === 2409,
    `HTTP ${certificate.status}, code ${certificate.body.code ?? '-'} ${certificate.body.message ?? ''}`,
  );
}

/** The embedded engine's address, from the release's log line that announces it. */
function engineAddress(release: Release): string | undefined {
  for (const line of release.output.join('').split('\n')) {
    if (!line.includes('embedded Temporal engine running')) continue;
    try {
      return (JSON.parse(line) as { address?: string }).address;
    } catch {
      // not a JSON line
    }
  }
  return undefined;
}

/**
 * The engine's view: the workflows the old release started ran on under the new code without a failed workflow task
 * (a replay that does not match the history fails its task, and the run then hangs rather than fails), and no run
 * of the namespace failed, was terminated or timed out.
 */
async function checkWorkflows(release: Release, open: OpenProcesses, dataDir: string): Promise<void> {
  const address = engineAddress(release);
  if (!address) {
    check('workflows replayed without a failed task', false, 'no engine address in the new release log');
    return;
  }
  // the engine answers only its token's holders (DATA_DIR/engine-token, written by the release that runs it)
  const engineToken = (await readFile(join(dataDir, ENGINE_TOKEN_FILE), 'utf8')).trim();
  const connection = await Connection.connect({ address, ...temporalTransportOptions({ engineToken }) });
  try {
    const client = new TemporalClient({ connection, namespace: 'default' });
    const ids = [
      `verification:${open.verification.receiptId}`,
      `escrow:${open.escrowReceiptId}`,
      `reserve:${open.reserveId}`,
      `schedule:${open.scheduleId}`,
      `delivery:${open.messageDeliveryId}`,
      ...open.projectDeliveryIds.map((id) => `delivery:${id}`),
    ];
    const failedTask = proto.temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED;
    const seen: string[] = [];
    let failedTasks = 0;
    for (const id of ids) {
      const handle = client.workflow.getHandle(id);
      let status: Awaited<ReturnType<typeof handle.describe>>['status'];
      try {
        ({ status } = await handle.describe());
      } catch (err) {
        // a release whose dispatcher sends deliveries from their rows started no workflow for them: nothing to replay
        if (err instanceof WorkflowNotFoundError && id.startsWith('delivery:')) {
          seen.push(`${id} a row of the dispatcher (no workflow)`);
          continue;
        }
        throw err;
      }
      const failed = ((await handle.fetchHistory()).events ?? []).filter((e) => e.eventType === failedTask).length;
      failedTasks += failed;
      seen.push(`${id.split(':')[0]} ${status.name}${failed ? ` (${failed} failed tasks)` : ''}`);
    }
    check('workflows of the old release replayed without a failed task', failedTasks === 0, seen.join(', '));
    const ended: string[] = [];
    for (const status of ['Failed', 'Terminated', 'TimedOut']) {
      const { count } = await client.workflow.count(`ExecutionStatus="${status}"`);
      if (count > 0) ended.push(`${count} ${status}`);
    }
    check('no workflow failed, terminated or timed out', ended.length === 0, ended.join(', ') || 'none');
  } finally {
    await connection.close();
  }
}

// ---- the run ---------------------------------------------------------------------------------------------------

async function git(...args: string[]): Promise<string> {
  const { stdout } = await run('git', ['-C', ROOT, ...args], { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/** A lock file's installed packages that are not development-only (path, version, integrity), in a stable order. */
function runtimePackages(lock: string): string {
  const parsed = JSON.parse(lock) as {
    packages?: Record<string, { dev?: boolean; version?: string; integrity?: string }>;
  };
  return JSON.stringify(
    Object.entries(parsed.packages ?? {})
      .filter(([path, entry]) => path !== '' && entry.dev !== true)
      .map(([path, entry]) => [path, entry.version ?? '', entry.integrity ?? ''])
      .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0)),
  );
}

/** Checks the old release out into a worktree of its own, with this checkout's node_modules linked into it. */
async function checkOutOldRelease(commit: string, dir: string): Promise<void> {
  // the dependencies are this checkout's: the old release must run on the runtime packages it was built with (a
  // development tool added or updated since, such as a test's client library, does not change what it runs on)
  const oldLock = await git('show', `${commit}:package-lock.json`);
  const newLock = await readFile(join(ROOT, 'package-lock.json'), 'utf8');
  if (runtimePackages(oldLock) !== runtimePackages(newLock)) {
    throw new CannotRun(
      `the runtime packages of package-lock.json differ between ${commit.slice(0, 10)} and this checkout: the old release needs its own npm install, which this check does not do`,
    );
  }
  await git('worktree', 'add', '--detach', dir, commit);
  cleanups.push({
    what: 'removing the worktree',
    fn: async () => {
      await git('worktree', 'remove', '--force', dir).catch(() => git('worktree', 'prune'));
    },
  });
  await symlink(await realpath(join(ROOT, 'node_modules')), join(dir, 'node_modules'), 'dir');
}

/** A database of the run's own on the given server; its URL. Dropped at the end (WITH (FORCE): no session stays). */
async function createDatabase(serverUrl: string): Promise<string> {
  const name = `upgrade_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  cleanups.push({
    what: `dropping database ${name}`,
    fn: async () => {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  });
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  log(`database ${name} created on ${url.host}`);
  return url.toString();
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { from: { type: 'string' }, 'database-url': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help || !values.from) {
    process.stdout.write('usage: npx tsx tools/upgrade-check.ts --from <git-ref> [--database-url postgres://...]\n');
    return values.help ? 0 : 2;
  }
  const from = (await git('rev-parse', '--verify', '--quiet', `${values.from}^{commit}`).catch(() => '')).trim();
  if (!from) throw new CannotRun(`${values.from} names no commit of this repository`);
  const to = (await git('rev-parse', 'HEAD')).trim();
  const dirty = (await git('status', '--porcelain', '--untracked-files=no')).trim() !== '';
  const database = values['database-url'] ? 'Postgres' : 'PGlite';
  log(
    `upgrade check: ${from.slice(0, 10)} → this checkout (${to.slice(0, 10)}${dirty ? ', with uncommitted changes' : ''}) on ${database}`,
  );

  const tmp = await mkdtemp(join(tmpdir(), 'paygate-upgrade-'));
  cleanups.push({ what: 'removing the temporary directory', fn: () => rm(tmp, { recursive: true, force: true }) });
  const oldRoot = join(tmp, 'old');
  await checkOutOldRelease(from, oldRoot);
  log(`old release checked out in ${oldRoot}`);

  const receiver = await Receiver.start();
  cleanups.push({ what: 'closing the receiver', fn: () => receiver.close() });

  // The same port for both releases: the sandbox escrow PG keeps paygate's notification URL per order, as a real PG
  // keeps a merchant's; a deployment keeps its address across an upgrade. Only what the README lists is set, so
  // nothing of this shell's environment (a DATABASE_URL, a TEMPORAL_ADDRESS) leaks in.
  const port = await freePort();
  const adminToken = `upgrade-admin-${randomBytes(16).toString('hex')}`;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: join(tmp, 'data'),
    ADMIN_TOKEN: adminToken,
    // sandbox PGs and clock, and loopback webhook receivers; explicit because a DATABASE_URL turns the default off
    PAYGATE_SANDBOX: 'true',
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    ...(values['database-url'] ? { DATABASE_URL: await createDatabase(values['database-url']) } : {}),
  };
  const api = new Api(`http://127.0.0.1:${port}`);
  const adminAuth = `Bearer ${adminToken}`;

  log(`starting the old release on port ${port}, DATA_DIR ${env.DATA_DIR}`);
  const old = await startRelease('old', oldRoot, env, port);
  log(`old release ready (pid ${old.child.pid})`);
  const open = await openProcesses(api, adminAuth, receiver);
  log(`stopping the old release: ${await stopRelease(old)}`);

  log('starting the new release on the same DATA_DIR, port and database');
  const started = Date.now();
  const current = await startRelease('new', ROOT, env, port);
  log(`new release ready (pid ${current.child.pid}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  // each step on its own: one that fails is reported, and the others still run
  await step('verification', () => completeVerification(api, open));
  await step('escrow', () => completeEscrow(api, open));
  receiver.failing = false;
  log('receiver now answers 200');
  await step('sandbox clock advance', () => advanceClock(api, open));
  await step('reserve', () => checkReserve(api, open));
  await step('schedule', () => checkSchedule(api, open));
  await step('deliveries', () => checkDeliveries(api, open, receiver));
  await step('verification lookup window', () => checkVerificationWindow(api, open));
  await step('workflows', () => checkWorkflows(current, open, env.DATA_DIR!));
  const errors = errorLines(current);
  check(
    'new release logged no error',
    errors.length === 0,
    errors.length ? `${errors.length} line(s), first: ${errors[0]!.slice(0, 600)}` : 'none',
  );
  log(`stopping the new release: ${await stopRelease(current)}`);
  return checks.every((c) => c.ok) ? 0 : 1;
}

let code = 2;
try {
  code = await main();
} catch (err) {
  // interrupted: the error is only the releases being killed under the run
  if (interrupted) await exitInterrupted(interrupted);
  log(
    err instanceof CannotRun
      ? `cannot run: ${err.message}`
      : `the check could not complete: ${(err as Error).stack ?? String(err)}`,
  );
  // what the releases said last, to tell a harness problem from a release's
  for (const release of releases) {
    const tail = release.output.join('').trimEnd().split('\n').slice(-25);
    log(`last lines of the ${release.name} release:\n${tail.join('\n')}`);
  }
  code = checks.some((c) => !c.ok) ? 1 : 2;
} finally {
  await cleanup();
}
const failed = checks.filter((c) => !c.ok).length;
log(
  `upgrade check ${code === 0 ? 'passed' : code === 1 ? 'FAILED' : 'could not run'}: ${checks.length - failed}/${checks.length} checks passed in ${((Date.now() - t0) / 1000).toFixed(0)} s`,
);
process.exit(code);
