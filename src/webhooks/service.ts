// Outbound webhooks: the messaging sub-service's configuration (read, save, secret rotation), the test
// send, the delivery history, manual retry and replay; the project's webhook_url and its secret (admin
// API) — and `deliver`, the one entry every producer of outbound events goes through. Producers call
// `deliverMessageEvent` (message events), `deliverToProject` (payment / escrow / recurring events to the
// project's webhook_url) or `deliverFeedback` (a charge's receipt to its feedback_url). The engine under them
// (a delivery row due at once, requeue) is delivery-engine.ts; the worker's dispatcher sends the rows (dispatcher.ts).
// The admin and messaging use cases are in message-webhook-*.ts and project-webhook-*.ts, bound here over one
// WebhookServiceContext.
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type {
  DeliveryView,
  FeedbackTarget,
  OutboundEvent,
  PageQuery,
  ProjectDeliveryQuery,
  UrlPolicy,
  WebhookConfigChange,
  WebhookConfigView,
} from './rules.js';
import type { Project, ProjectWebhooks } from '../projects/index.js';
import type { DeliveryRow } from './store.js';
import {
  createDeliveryEngine,
  type DeliverOptions,
  type DispatchSignal,
  type EndpointRef,
  type Requeued,
} from './delivery-engine.js';

import { checkDestination, type Resolver } from './http-client.js';
import { newSigningSecret } from './signing.js';
import type { WebhookStore } from './store.js';
import { MESSAGE, PROJECT, type WebhookServiceContext } from './service-context.js';
import { messageWebhookConfig, rotateMessageWebhookSecret, saveMessageWebhook } from './message-webhook-config.js';
import {
  messageDeliveries,
  replayFailedDeliveries,
  retryMessageDelivery,
  sendMessageWebhookTest,
} from './message-webhook-deliveries.js';
import { checkProjectUrl, rotateProjectSecret, setProjectUrl } from './project-webhook-config.js';
import { projectDeliveries, retryProjectDelivery } from './project-webhook-deliveries.js';

export type { DeliverOptions, DispatchSignal, EndpointRef, Requeued } from './delivery-engine.js';

/** At most this many failed deliveries are re-sent by one replay call; calling again continues. */
export const MAX_REPLAY = 1000;

/** Also the project's webhook_url and its secret, as the projects area asks for them (ProjectWebhooks). */
export interface WebhookService extends ProjectWebhooks {
  config(project: Project): Promise<WebhookConfigView>;
  /** PUT: the body checked whole (3028 for a URL, 9400 otherwise) before anything is written. */
  save(project: Project, change: WebhookConfigChange): Promise<WebhookConfigView>;
  /** The configuration with the new secret; the previous one signs beside it for 24 hours. */
  rotateSecret(project: Project): Promise<WebhookConfigView>;
  /** The 301 test card, sent whatever `enabled` and `events` say; 3029 without a stored URL. */
  sendTest(project: Project): Promise<Requeued>;
  deliveries(project: Project, page: PageQuery): Promise<{ rows: DeliveryView[]; count: number }>;
  retry(project: Project, deliveryId: string): Promise<Requeued>;
  /** Every failed delivery created since `since` (at most MAX_REPLAY per call), sent again. */
  replay(project: Project, since: Date): Promise<Requeued[]>;
  /**
   * The delivery engine's one entry: records a delivery of `event` to the endpoint, due now (the dispatcher sends it).
   * Undefined when the endpoint has no URL, is disabled, or is not subscribed to the event (unless `regardless`).
   */
  deliver(event: OutboundEvent, endpoint: EndpointRef, opts?: DeliverOptions): Promise<DeliveryRow | undefined>;

  /** A message event to the project's messaging webhook, when configured, enabled and subscribed. */
  deliverMessageEvent(applicationId: string, event: OutboundEvent): Promise<DeliveryRow | undefined>;
  /** A payment / escrow / recurring event to the project's webhook_url; undefined without one or while disabled. */
  deliverToProject(applicationId: string, event: OutboundEvent, deliveryId?: string): Promise<DeliveryRow | undefined>;
  /**
   * A charge's receipt to its feedback_url, signed with the project's webhook secret (issued now if it has none).
   * With a `deliveryId` (a reserve's result), a second call returns the delivery saved by the first. With `within`,
   * the delivery is written by the producer's unit of work (Stores.transaction): it exists exactly when the
   * producer's change does (an outbox row), and is sent once the producer calls `dispatchNow` after its commit.
   */
  deliverFeedback(
    applicationId: string,
    target: FeedbackTarget,
    event: OutboundEvent,
    deliveryId?: string,
    within?: OutboxTransaction,
  ): Promise<DeliveryRow>;
  /** Wakes this process's dispatcher: deliveries written in a producer's transaction are due once it has committed. */
  dispatchNow(): void;
  /**
   * Save-time check of a charge's or a reserve's feedback_url, by the rule every delivery connects under: the URL
   * rules of the mode, then every address its host resolves to (global unicast; loopback too in sandbox mode).
   * 9400 naming feedback_url and the reason; nothing is written.
   */
  checkFeedbackUrl(url: string): Promise<void>;

  /**
   * The deliveries of the project's own notifications (deliverToProject to its webhook_url, deliverFeedback to
   * charges' feedback_url), newest first with their attempts; `destination` narrows to one. 9426 for no project.
   */
  projectDeliveries(applicationId: string, query: ProjectDeliveryQuery): Promise<{ rows: DeliveryView[]; count: number }>;
  /**
   * One more attempt of a failed project or feedback delivery now (the dispatcher sends it), the same
   * webhook-id. 9426 for no project, 9428 for a delivery that is not the project's (a message delivery
   * included), 9427 when it has not failed.
   */
  retryProjectDelivery(applicationId: string, deliveryId: string): Promise<Requeued>;
}

/** A producer's unit of work (Stores.transaction) as the webhooks area writes in it. */
export interface OutboxTransaction {
  readonly webhooks: WebhookStore;
}

export function createWebhookService(deps: {
  readonly stores: { readonly webhooks: WebhookStore };
  /** the wall clock: deliveries' created_at, secrets' overlap */
  readonly clock: () => Date;
  /** the retry ladder's clock (Clocks.businessClock): when a delivery or a manual retry is due; `clock` when absent */
  readonly businessClock?: () => Date;
  /** sandbox mode: http to loopback receivers is allowed */
  readonly sandbox: boolean;
  /** the save-time DNS lookup (tests inject one) */
  readonly resolve?: Resolver;
  /** the dispatcher of this process (the worker's), woken when a delivery is due now */
  readonly dispatch?: DispatchSignal;
}): WebhookService {
  const store = deps.stores.webhooks;
  const policy: UrlPolicy = { sandbox: deps.sandbox };

  const clocks = { clock: deps.clock, businessClock: deps.businessClock ?? deps.clock };
  const engine = createDeliveryEngine({ store, ...clocks, ...(deps.dispatch ? { dispatch: deps.dispatch } : {}) });
  const ctx: WebhookServiceContext = { store, policy, resolve: deps.resolve, clock: deps.clock, engine };

  const service: WebhookService = {
    config: (project) => messageWebhookConfig(ctx, project),
    save: (project, change) => saveMessageWebhook(ctx, project, change),
    rotateSecret: (project) => rotateMessageWebhookSecret(ctx, project),
    sendTest: (project) => sendMessageWebhookTest(ctx, project),
    deliveries: (project, page) => messageDeliveries(ctx, project, page),
    retry: (project, deliveryId) => retryMessageDelivery(ctx, project, deliveryId),
    replay: (project, since) => replayFailedDeliveries(ctx, project, since, MAX_REPLAY),

    deliver(event, ref, opts) {
      return engine.deliver(event, ref, opts);
    },

    deliverMessageEvent(applicationId, event) {
      return service.deliver(event, { kind: MESSAGE, applicationId });
    },

    deliverToProject(applicationId, event, deliveryId) {
      return service.deliver(event, { kind: PROJECT, applicationId }, deliveryId !== undefined ? { deliveryId } : {});
    },

    async deliverFeedback(applicationId, target, event, deliveryId, within) {
      // a project without a webhook_url still signs: its endpoint row is created with a secret (rotate shows it)
      await (within?.webhooks ?? store).saveEndpoint(applicationId, PROJECT, {}, newSigningSecret(), newId());
      // in the producer's transaction the dispatcher is not woken: the row is not there for it before the commit
      const row = await (within ? createDeliveryEngine({ store: within.webhooks, ...clocks }) : engine).deliver(
        event,
        { kind: PROJECT, applicationId },
        { feedback: target, ...(deliveryId !== undefined ? { deliveryId } : {}) },
      );
      if (!row) throw new Error('the project endpoint vanished while a feedback delivery was being saved');
      return row;
    },

    dispatchNow() {
      deps.dispatch?.wake();
    },

    async checkFeedbackUrl(url) {
      const checked = await checkDestination(url, policy, deps.resolve);
      if ('reason' in checked) throw new ApiError('INVALID_REQUEST', { payloadMessage: `feedback_url: ${checked.reason}` });
    },

    checkProjectUrl: (url) => checkProjectUrl(ctx, url),
    setProjectUrl: (applicationId, url) => setProjectUrl(ctx, applicationId, url),
    rotateProjectSecret: (applicationId) => rotateProjectSecret(ctx, applicationId),
    projectDeliveries: (applicationId, query) => projectDeliveries(ctx, applicationId, query),
    retryProjectDelivery: (applicationId, deliveryId) => retryProjectDelivery(ctx, applicationId, deliveryId),
  };
  return service;
}
