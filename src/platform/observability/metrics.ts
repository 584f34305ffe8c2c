// paygate's own Prometheus metrics: one registry per process (never prom-client's global one), built once by the
// entry point and handed to the API, the services and the activities through their deps. Each use case counts
// what it did with one call, so a charge made by a route and one made by an activity land in the same series.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Latency buckets in seconds: API answers, PG calls and webhook receivers all fall between 5 ms and 30 s. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30];

/** A charge's end: the PG approved it, the PG refused it (final), or it failed (PG or network error, retried). */
/** `answer_mismatch`: an upstream provider charged, but not what was asked (the receipt is marked for attention) */
export type ChargeOutcome = 'paid' | 'declined' | 'failed' | 'answer_mismatch';
/** A verification step and its end: OTP sent, verified, refused (a catalog answer: wrong OTP, locked, expired) or failed (PG, engine). */
export type VerificationStage = 'request' | 'confirm';
export type VerificationOutcome = 'sent' | 'verified' | 'refused' | 'failed';
/** One webhook attempt: a 2xx, another status, no answer (network, timeout), or refused by the URL rules before sending. */
export type WebhookAttemptOutcome = 'success' | 'http_error' | 'network_error' | 'refused';
/** One schedule period's charge attempt, as the schedule workflow's activity ends it. */
export type ScheduleChargeOutcome = 'paid' | 'declined' | 'ended' | 'failed';

/**
 * One call to a project's upstream provider: answered (ok), its catalog error (refused: an answer too), no usable
 * answer (unavailable: network, 5xx without a catalog body, garbage), no answer in time (timeout), or not sent since
 * the provider's circuit is open (circuit_open).
 */
export type UpstreamCallOutcome = 'ok' | 'refused' | 'unavailable' | 'timeout' | 'circuit_open';
/** The upstream providers' circuits, read when Prometheus scrapes: per provider label, how many projects' circuits are in each state. */
export type UpstreamCircuitsReader = () => ReadonlyMap<string, Readonly<Record<'closed' | 'open' | 'half_open', number>>>;

/** Pending webhook deliveries by state, read from the database when Prometheus scrapes. */
export type PendingDeliveriesReader = () => Promise<Readonly<Record<'ready' | 'doing', number>>>;

export interface Metrics {
  readonly registry: Registry;
  /** the Content-Type of `render()` */
  readonly contentType: string;
  render(): Promise<string>;
  /** `route` is the router's pattern (`/v2/receipt/:receipt_id`), never the URL a client sent */
  httpRequest(method: string, route: string, status: number, seconds: number): void;
  charge(outcome: ChargeOutcome, pg: string): void;
  verification(stage: VerificationStage, outcome: VerificationOutcome): void;
  webhookAttempt(outcome: WebhookAttemptOutcome, seconds: number): void;
  webhookEndpointAutoDisabled(): void;
  scheduleCharge(outcome: ScheduleChargeOutcome): void;
  workflowStart(workflowType: string): void;
  /**
   * A call to an upstream provider, labelled by the provider's host (host[:port] of its base_url: a handful per
   * deployment, where an application_id label would multiply every series by the number of projects). `seconds`: the
   * exchange's time; absent for a call never sent (circuit_open).
   */
  upstreamCall(provider: string, outcome: UpstreamCallOutcome, seconds?: number): void;
  /** where the circuit gauge reads from (the process's upstream service); unset: the gauge reports nothing */
  readUpstreamCircuitsFrom(reader: UpstreamCircuitsReader): void;
  /** a workflow refused a message, its input or an activity result (src/workflows/interceptors.ts) */
  workflowRefusal(kind: string, name: string, reason: string): void;
  /** where the pending-deliveries gauge reads from (the process's database); unset: the gauge reports nothing */
  readPendingDeliveriesFrom(reader: PendingDeliveriesReader): void;
}

export interface MetricsOptions {
  /** Node's own process metrics (CPU, heap, event loop lag, GC) with the `paygate_` prefix; on unless false */
  readonly processMetrics?: boolean;
  /** a label set on every series, e.g. { process: 'worker' } */
  readonly defaultLabels?: Readonly<Record<string, string>>;
}

export function createMetrics(opts: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  if (opts.defaultLabels) registry.setDefaultLabels({ ...opts.defaultLabels });
  if (opts.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'paygate_' });
  const registers = [registry];

  const httpRequests = new Counter({
    name: 'paygate_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status code',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  });
  const httpDuration = new Histogram({
    name: 'paygate_http_request_duration_seconds',
    help: 'Time from receiving a request to sending its response, by method, route pattern and status code',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const charges = new Counter({
    name: 'paygate_charges_total',
    help: 'Billing-key charges sent to a PG, by outcome (paid, declined, failed, answer_mismatch) and PG',
    labelNames: ['outcome', 'pg'] as const,
    registers,
  });
  const verifications = new Counter({
    name: 'paygate_verifications_total',
    help: 'Identity verification steps, by stage (request, confirm) and outcome (sent, verified, refused, failed)',
    labelNames: ['stage', 'outcome'] as const,
    registers,
  });
  const webhookAttempts = new Counter({
    name: 'paygate_webhook_attempts_total',
    help: 'Webhook delivery attempts, by outcome (success, http_error, network_error, refused)',
    labelNames: ['outcome'] as const,
    registers,
  });
  const webhookDuration = new Histogram({
    name: 'paygate_webhook_attempt_duration_seconds',
    help: "Webhook attempts' exchange with the receiver, by outcome",
    labelNames: ['outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const autoDisabled = new Counter({
    name: 'paygate_webhook_endpoints_auto_disabled_total',
    help: 'Webhook endpoints disabled by their failures (10 in a row, or a 410 Gone)',
    registers,
  });
  const scheduleCharges = new Counter({
    name: 'paygate_schedule_charges_total',
    help: "Subscription schedule periods' charge attempts, by outcome (paid, declined, ended, failed)",
    labelNames: ['outcome'] as const,
    registers,
  });
  const workflowStarts = new Counter({
    name: 'paygate_workflow_starts_total',
    help: 'Workflow start requests the Temporal service accepted (start, update-with-start), by workflow type',
    labelNames: ['workflow_type'] as const,
    registers,
  });
  const workflowRefusals = new Counter({
    name: 'paygate_workflow_refusals_total',
    help:
      'Signals and updates a workflow dropped or rejected, and workflow inputs and activity results it refused, because ' +
      'they were not sealed by paygate for that workflow and message; by kind, message name and reason',
    labelNames: ['kind', 'name', 'reason'] as const,
    registers,
  });

  const upstreamCalls = new Counter({
    name: 'paygate_upstream_calls_total',
    help: 'Calls to upstream providers, by provider host and outcome (ok, refused, unavailable, timeout, circuit_open)',
    labelNames: ['provider', 'outcome'] as const,
    registers,
  });
  const upstreamDuration = new Histogram({
    name: 'paygate_upstream_call_duration_seconds',
    help: "Calls to upstream providers: the exchange's time, by provider host and outcome (calls not sent are not observed)",
    labelNames: ['provider', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  let readCircuits: UpstreamCircuitsReader | undefined;
  new Gauge({
    name: 'paygate_upstream_circuits',
    help: "Projects' upstream provider circuits in this process, by provider host and state (closed, open, half_open)",
    labelNames: ['provider', 'state'] as const,
    registers,
    collect() {
      this.reset();
      if (!readCircuits) return;
      for (const [provider, states] of readCircuits()) {
        for (const state of ['closed', 'open', 'half_open'] as const) this.set({ provider, state }, states[state]);
      }
    },
  });

  let readPending: PendingDeliveriesReader | undefined;
  new Gauge({
    name: 'paygate_webhook_deliveries_pending',
    help: 'Webhook deliveries not yet done or failed, by state (ready: waiting for an attempt, doing: being sent), read at scrape time',
    labelNames: ['state'] as const,
    registers,
    async collect() {
      if (!readPending) return;
      try {
        const pending = await readPending();
        this.set({ state: 'ready' }, pending.ready);
        this.set({ state: 'doing' }, pending.doing);
      } catch {
        // the database is unreachable: no figure rather than a stale one, and the rest of the scrape still answers
        this.reset();
      }
    },
  });

  return {
    registry,
    contentType: registry.contentType,
    render: () => registry.metrics(),
    httpRequest(method, route, status, seconds) {
      const labels = { method, route, status: String(status) };
      httpRequests.inc(labels);
      httpDuration.observe(labels, seconds);
    },
    charge: (outcome, pg) => charges.inc({ outcome, pg }),
    verification: (stage, outcome) => verifications.inc({ stage, outcome }),
    webhookAttempt(outcome, seconds) {
      webhookAttempts.inc({ outcome });
      webhookDuration.observe({ outcome }, seconds);
    },
    webhookEndpointAutoDisabled: () => autoDisabled.inc(),
    scheduleCharge: (outcome) => scheduleCharges.inc({ outcome }),
    workflowStart: (workflowType) => workflowStarts.inc({ workflow_type: workflowType }),
    workflowRefusal: (kind, name, reason) => workflowRefusals.inc({ kind, name, reason }),
    upstreamCall(provider, outcome, seconds) {
      upstreamCalls.inc({ provider, outcome });
      if (seconds !== undefined) upstreamDuration.observe({ provider, outcome }, seconds);
    },
    readUpstreamCircuitsFrom(reader) {
      readCircuits = reader;
    },
    readPendingDeliveriesFrom(reader) {
      readPending = reader;
    },
  };
}
