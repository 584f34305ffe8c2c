// Every use case, built once per process from the stores and gateways. Routes and activities call
// these; neither holds a use case of its own.
import type { DatabaseNotifications } from '../platform/db/notifications.js';
import { type GatewayRegistry, createSandboxFaultService, type SandboxFaultService } from '../gateways/index.js';
import type { Stores } from './stores.js';
import type { WorkerServices } from '../activities/index.js';
import {
  createAccessTokenService,
  type AccessTokenService,
  createProjectService,
  type ProjectService,
} from '../projects/index.js';
import {
  createBillingKeyService,
  type BillingKeyService,
  createCancelService,
  type CancelService,
  createChargeService,
  type ChargeService,
  createReceiptService,
  createReconcileStarter,
  type ReceiptService,
  type ReconcileStarter,
  createProviderNotificationService,
  type ProviderNotificationService,
} from '../payments/index.js';
import { createEscrowService, escrowDataLookup, type EscrowService } from '../escrow/index.js';
import type { OperationLog } from '../platform/operation-log.js';
import {
  createDeliveryDispatcher,
  type DeliveryDispatcher,
  createMessageService,
  type MessageService,
  createWebhookService,
  type WebhookService,
  type Resolver,
  type WebhookAttemptOptions,
} from '../webhooks/index.js';
import { createReserveService, type ReserveService } from '../reserves/index.js';
import { createScheduleService, type ScheduleService } from '../schedules/index.js';
import { countVerificationOutcomes, createVerificationService, type VerificationService } from '../verification/index.js';
import type { SendLimits } from '../verification/send-limit-rules.js';
import type { WorkflowRuntime } from '../platform/temporal/workflow-calls.js';
import type { Metrics } from '../platform/observability/metrics.js';
import { type CircuitSettings, createUpstreamService, type ProviderClient, type UpstreamService } from '../upstream/index.js';

export interface Services {
  readonly projects: ProjectService;
  readonly accessTokens: AccessTokenService;
  readonly billingKeys: BillingKeyService;
  readonly charges: ChargeService;
  readonly cancels: CancelService;
  readonly receipts: ReceiptService;
  readonly verifications: VerificationService;
  readonly webhooks: WebhookService;
  /**
   * Sends the webhook deliveries (the rows `webhooks.deliver` saves): built in every process, started only by the
   * worker's (startWorkerLoops); a process that does not run it leaves its rows to the worker's poll.
   */
  readonly webhookDispatcher: DeliveryDispatcher;
  readonly messages: MessageService;
  readonly escrow: EscrowService;
  readonly reserves: ReserveService;
  readonly schedules: ScheduleService;
  /** the project's upstream provider: its configuration, and calls to it with the project's keys there */
  readonly upstream: UpstreamService;
  /** the provider's notifications about payments it holds for a project */
  readonly providerNotifications: ProviderNotificationService;
  /** arming sandbox PG faults for merchants' tests: with the sandbox's address (sandbox mode) only */
  readonly sandboxFaults?: SandboxFaultService;
  /** starts reconcile workflows (charges and cancels hand over through it, the worker's sweep too): with a workflow runtime only */
  readonly reconcile?: ReconcileStarter;
  readonly worker: WorkerServices;
}

export interface ServiceDeps {
  readonly stores: Stores;
  readonly gateways: GatewayRegistry;
  /**
   * Real-world time (Clocks.wallClock in src/platform/time.ts): the projects' keys and rotation grace, access tokens,
   * webhooks (deliveries, attempts, secrets' overlap), sandbox messages, the upstream configuration.
   */
  readonly wallClock: () => Date;
  /**
   * The durable processes' time (Clocks.businessClock): the payments, verification, escrow, reserve and schedule use
   * cases stamp their rows and judge their windows with it (tests pass a controllable clock).
   */
  readonly businessClock: () => Date;
  /** where the long-running processes run; without it their use cases answer 9503 */
  readonly workflows?: WorkflowRuntime;
  /** how long a use case waits on a workflow before answering with an error instead */
  readonly workflowCallTimeoutMs?: number;
  /** the sandbox gateways' address, for the sandbox-only SMS inbox and sandbox faults */
  readonly sandboxUrl?: string;
  /** sandbox mode (config.sandbox): projects get sandbox PGs only then */
  readonly sandbox?: boolean;
  /** the Bearer token of the sandbox's internal routes */
  readonly sandboxToken?: string;
  /** the DNS lookup of the webhook URL check at save (tests inject one) */
  readonly webhookResolve?: Resolver;
  /** how the dispatcher's attempts connect (tests inject a resolver, a short timeout); sandbox and wall clock from here */
  readonly webhookAttempts?: Pick<WebhookAttemptOptions, 'resolve' | 'attemptTimeoutMs'>;
  /** where a use case reports what happened outside a request (a webhook attempt that could not be completed) */
  readonly logger?: Pick<OperationLog, 'warn'>;
  /** {base_url}: where escrow PGs are told to send their notifications */
  readonly publicBaseUrl?: string;
  /** the process's metrics: each use case counts what it did */
  readonly metrics?: Metrics;
  /** the transport to upstream providers (built with the gateways); absent where nothing calls one */
  readonly providers?: ProviderClient;
  /** the upstream providers' circuits (UPSTREAM_CIRCUIT_*); the upstream area's defaults where absent */
  readonly upstreamCircuit?: CircuitSettings;
  /** caps on verification OTP sends per phone and per project; the verification area's defaults where absent */
  readonly verificationSendLimits?: SendLimits;
  /** the database's LISTEN/NOTIFY (Postgres): a delivery saved by an API process wakes the worker's dispatcher */
  readonly databaseNotifications?: DatabaseNotifications;
}

export function createServices(deps: ServiceDeps): Services {
  const { stores, gateways, wallClock } = deps;
  // which use case reads which clock: docs/design/sandbox.md ("Which clock")
  const clock = deps.businessClock;
  const metrics = deps.metrics ? { metrics: deps.metrics } : {};
  // attempts are made and signed on the wall clock; the ladder waits on the business clock (an advance moves it)
  const webhookDispatcher = createDeliveryDispatcher({
    store: stores.webhooks,
    attempts: { sandbox: deps.sandbox === true, clock: wallClock, ...deps.webhookAttempts },
    businessClock: clock,
    ...metrics,
    ...(deps.logger ? { logger: deps.logger } : {}),
    ...(deps.databaseNotifications ? { notifications: deps.databaseNotifications } : {}),
  });
  const webhooks = createWebhookService({
    stores,
    clock: wallClock,
    businessClock: clock,
    sandbox: deps.sandbox === true,
    dispatch: webhookDispatcher,
    ...(deps.webhookResolve ? { resolve: deps.webhookResolve } : {}),
  });
  // a charge or cancel that lost its PG answer is handed to its reconcile workflow (the worker's sweep without an engine)
  const reconcile = deps.workflows ? { reconcile: createReconcileStarter(deps.workflows) } : {};
  const logger = deps.logger ? { logger: deps.logger } : {};
  const upstream = createUpstreamService({
    stores,
    sandbox: deps.sandbox === true,
    publicBaseUrl: deps.publicBaseUrl ?? '',
    clock: wallClock,
    ...(deps.providers ? { client: deps.providers } : {}),
    ...(deps.webhookResolve ? { resolve: deps.webhookResolve } : {}),
    ...(deps.upstreamCircuit ? { circuit: deps.upstreamCircuit } : {}),
    ...logger,
    ...metrics,
  });
  // the payment use cases reach a project's PGs at its upstream provider through it, the local ones through `gateways`
  const pgs = { gateways, upstream };
  const charges = createChargeService({ stores, ...pgs, webhooks, clock, ...reconcile, ...logger, ...metrics });
  const cancels = createCancelService({ stores, ...pgs, clock, ...reconcile, ...logger });
  const schedules = createScheduleService({
    stores,
    ...pgs,
    clock,
    ...(deps.workflows ? { workflows: deps.workflows } : {}),
    ...(deps.workflowCallTimeoutMs !== undefined ? { workflowCallTimeoutMs: deps.workflowCallTimeoutMs } : {}),
  });
  const billingKeys = createBillingKeyService({ stores, ...pgs, clock, charges, cancels });
  const escrow = createEscrowService({
    stores,
    ...pgs,
    clock,
    ...(deps.workflows ? { workflows: deps.workflows } : {}),
    ...(deps.workflowCallTimeoutMs !== undefined ? { workflowCallTimeoutMs: deps.workflowCallTimeoutMs } : {}),
    ...(deps.publicBaseUrl ? { notifyBaseUrl: deps.publicBaseUrl } : {}),
    ...(deps.sandboxUrl ? { sandboxUrl: deps.sandboxUrl } : {}),
    ...(deps.sandboxToken ? { sandboxToken: deps.sandboxToken } : {}),
    ...(deps.logger ? { logger: deps.logger } : {}),
  });
  const receipts = createReceiptService({ stores, escrowData: escrowDataLookup(stores.escrow), upstream, ...logger });
  return {
    projects: createProjectService({
      stores,
      webhooks,
      // the dashboard's sessions on a project end when its keys rotate or it is disabled
      sessions: {
        endProjectSessions: async (applicationId) => void (await stores.dashboardSessions.endForProject(applicationId)),
      },
      knownPgs: gateways.names,
      sandbox: deps.sandbox === true,
      clock: wallClock,
    }),
    accessTokens: createAccessTokenService({ stores, clock: wallClock }),
    billingKeys: {
      ...billingKeys,
      // destroying a billing key cancels the schedules that charge it
      async destroy(project, billingKey, log) {
        const destroyed = await billingKeys.destroy(project, billingKey, log);
        await schedules.cancelForKey(project, destroyed.billing_key, log);
        return destroyed;
      },
    },
    charges,
    cancels,
    receipts,
    providerNotifications: createProviderNotificationService({
      stores,
      upstream,
      receipts,
      ...reconcile,
      // the escrow area sits above payments: its order is moved through this port
      escrow: (applicationId, receiptId, status) => escrow.providerEscrowStatus(applicationId, receiptId, status),
      escrowFollowUp: (applicationId, receiptId) => escrow.providerFollowUp(applicationId, receiptId),
    }),
    verifications: countVerificationOutcomes(
      createVerificationService({
        stores,
        ...pgs,
        clock,
        ...(deps.workflows ? { workflows: deps.workflows } : {}),
        ...(deps.workflowCallTimeoutMs !== undefined ? { workflowCallTimeoutMs: deps.workflowCallTimeoutMs } : {}),
        ...(deps.sandboxUrl ? { sandboxUrl: deps.sandboxUrl } : {}),
        ...(deps.sandboxToken ? { sandboxToken: deps.sandboxToken } : {}),
        ...(deps.verificationSendLimits ? { sendLimits: deps.verificationSendLimits } : {}),
      }),
      deps.metrics,
    ),
    webhooks,
    webhookDispatcher,
    messages: createMessageService({ stores, webhooks, clock: wallClock }),
    escrow,
    reserves: createReserveService({
      stores,
      ...pgs,
      clock,
      ...(deps.workflows ? { workflows: deps.workflows } : {}),
      ...(deps.workflowCallTimeoutMs !== undefined ? { workflowCallTimeoutMs: deps.workflowCallTimeoutMs } : {}),
    }),
    schedules,
    upstream,
    // without the sandbox's token (SANDBOX_TOKEN unset in a split deployment) the sandbox refuses: 9502
    ...(deps.sandboxUrl
      ? { sandboxFaults: createSandboxFaultService({ sandbox: { url: deps.sandboxUrl, token: deps.sandboxToken ?? '' } }) }
      : {}),
    ...reconcile,
    worker: {
      charges: createChargeService({ stores, ...pgs, clock, ...metrics }),
      cancels: createCancelService({ stores, ...pgs, clock }),
    },
  };
}
