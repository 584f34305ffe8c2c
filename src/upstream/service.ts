// The upstream connector's use cases: a project's provider configuration (admin API, CLI, dashboard), and the one
// way paygate calls that provider with the project's keys there. A provider's catalog error reaches the merchant
// unchanged (the adapters relay a refusal as RelayedApiError), except a refusal of the configured keys (1204 / 1216): that is the configuration's
// fault, not the merchant's request, so it becomes 9478, is noted on the configuration (GET shows it as
// last_error) and is logged once per configuration. Every call passes the provider's circuit (./circuit.ts): a
// provider that stopped answering is not called for a while, and the caller gets 9481 at once with a Retry-After.
import { ApiError } from '../platform/errors.js';
import { type Gateway, GatewayUnavailableError } from '../gateways/index.js';
import type { Metrics } from '../platform/observability/metrics.js';
import { formatTimestamp } from '../platform/time.js';
import {
  type CircuitSettings,
  createProviderCircuits,
  DEFAULT_CIRCUIT_SETTINGS,
  type ProviderFailureClass,
  type ProviderHealth,
  providerLabel,
} from './circuit.js';
import { createUpstreamCardGateway } from './card-gateway.js';
import { createUpstreamEscrowGateway } from './escrow-gateway.js';
import { createUpstreamIdentityGateway } from './identity-gateway.js';
import type { ProjectStore } from '../projects/index.js';
import type { OperationLog } from '../platform/operation-log.js';
import { checkHostAddresses, type Resolver } from '../webhooks/index.js';
import { ProviderRefusedError, type ProviderClient, type ProviderRequest } from './client.js';
import { isProviderKeyError, parseUpstreamConfig, renderUpstream } from './rules.js';
import type { UpstreamStore } from './store.js';

export interface UpstreamService {
  /** PUT: creates or replaces the configuration (9426 unknown project, 9400 malformed, 9476 a refused URL). */
  configure(applicationId: string, body: unknown): Promise<Record<string, unknown>>;
  /** GET: the configuration with its secret masked (9477 when there is none). */
  get(applicationId: string): Promise<Record<string, unknown>>;
  /** The same rendering, or undefined for a project without a provider (the dashboard's projects page). */
  find(applicationId: string): Promise<Record<string, unknown> | undefined>;
  /** DELETE: the project's PGs are local ones again (9477 when there was none). */
  remove(applicationId: string): Promise<{ readonly application_id: string; readonly deleted: true }>;
  /**
   * One call to the project's provider with the project's keys there. Resolves with the provider's 2xx answer;
   * throws ProviderRefusedError with the provider's own catalog error (the adapters decide what it means for their
   * operation), ApiError 9478 when the provider refused the keys, 9477 without a configuration,
   * GatewayUnavailableError when the provider could not answer.
   */
  call(applicationId: string, req: ProviderRequest, log?: Pick<OperationLog, 'warn'>): Promise<unknown>;
  /**
   * Throws 9481 (with Retry-After) when the project's provider circuit holds calls now, as `call` would, without
   * taking the half-open probe: what a use case asks before it writes anything for a call (a charge's order_id claim).
   */
  assertAvailable(applicationId: string): void;
  /**
   * The project's PG `pg` at its provider, behind the one gateway contract, when the provider serves that name for
   * the project (it shadows a local PG of the same name); undefined otherwise.
   */
  gateway(applicationId: string, pg: string): Promise<Gateway | undefined>;
}

/** What the payment areas need of the connector: the project's PGs that live at its provider. */
export type UpstreamGateways = Pick<UpstreamService, 'gateway'> & Partial<Pick<UpstreamService, 'assertAvailable'>>;

/** The answer to a call the open circuit holds: nothing was sent; retry after the circuit's remaining open time. */
export function circuitOpenError(retryAfterMs: number): ApiError {
  return new ApiError('UPSTREAM_UNAVAILABLE', { retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) });
}

/** A failure's class: the provider did not answer in time (a timeout, the whole call's deadline), or not usefully. */
function failureClass(err: GatewayUnavailableError): ProviderFailureClass {
  if (err.deadlineMissed) return 'timeout';
  // the Agent's own bounds (connect, headers, body), a backstop under the deadline
  return /timeout/i.test(err.message) ? 'timeout' : 'unavailable';
}

const MAX_HEALTH_MESSAGE = 300;

/** The health object of GET .../upstream: this process's view of the provider (its circuit, its last calls). */
export function renderHealth(health: ProviderHealth): Record<string, unknown> {
  return {
    circuit: health.state,
    ...(health.openUntil !== undefined ? { open_until: formatTimestamp(health.openUntil) } : {}),
    consecutive_failures: health.consecutiveFailures,
    ...(health.lastSuccessAt !== undefined ? { last_success_at: formatTimestamp(health.lastSuccessAt) } : {}),
    ...(health.lastError !== undefined
      ? {
          last_failure: {
            at: formatTimestamp(health.lastError.at),
            class: health.lastError.class,
            message: health.lastError.message,
          },
        }
      : {}),
  };
}

/** The refusal's catalog number: `code`, or an error_code that is itself the number (the provider's older bodies). */
function catalogNumber(body: { readonly code?: number; readonly error_code: string }): number {
  if (body.code !== undefined) return body.code;
  const asNumber = Number(body.error_code);
  return Number.isInteger(asNumber) ? asNumber : 0;
}

export function createUpstreamService(deps: {
  readonly stores: { readonly upstreams: UpstreamStore; readonly projects: Pick<ProjectStore, 'findById'> };
  /** the provider transport; absent where nothing calls a provider (the admin CLI's direct mode) */
  readonly client?: ProviderClient;
  /** sandbox mode: a provider on this machine over http is allowed */
  readonly sandbox: boolean;
  /** {PUBLIC_BASE_URL}: where the provider is told to send the project's notifications */
  readonly publicBaseUrl: string;
  readonly clock: () => Date;
  /** the DNS lookup of the production-mode address check at save (tests inject one) */
  readonly resolve?: Resolver;
  readonly logger?: Pick<OperationLog, 'warn'>;
  /** the providers' circuits (UPSTREAM_CIRCUIT_*); DEFAULT_CIRCUIT_SETTINGS where absent */
  readonly circuit?: CircuitSettings;
  /** the circuits' time: the host's real time (an outage lasts real seconds, whatever the sandbox clock says) */
  readonly realTime?: () => number;
  /** calls by provider and outcome, their latency, the circuits' states */
  readonly metrics?: Pick<Metrics, 'upstreamCall' | 'readUpstreamCircuitsFrom'>;
}): UpstreamService {
  const { upstreams, projects } = deps.stores;
  const policy = { sandbox: deps.sandbox };
  const circuits = createProviderCircuits(deps.circuit ?? DEFAULT_CIRCUIT_SETTINGS, deps.realTime);
  deps.metrics?.readUpstreamCircuitsFrom(() => circuits.statesByProvider());
  // a process that calls no provider (the admin CLI's direct mode) has no view of its health: none is shown
  const render = (view: Parameters<typeof renderUpstream>[0]) =>
    renderUpstream(
      view,
      deps.publicBaseUrl,
      deps.client ? renderHealth(circuits.health(view.applicationId, view.baseUrl)) : undefined,
    );

  const requireProject = async (applicationId: string) => {
    if (!(await projects.findById(applicationId))) throw new ApiError('PROJECT_NOT_FOUND');
  };

  /** Production mode: every address the host resolves to must be public (checked again at each connection). */
  const checkResolvedHost = async (field: string, url: string) => {
    if (deps.sandbox) return;
    const refusal = await checkHostAddresses(new URL(url).hostname, { sandbox: false }, deps.resolve);
    if (refusal !== undefined) throw new ApiError('UPSTREAM_URL_INVALID', { payloadMessage: `${field}: ${refusal}` });
  };

  const service: UpstreamService = {
    async configure(applicationId, body) {
      await requireProject(applicationId);
      const config = parseUpstreamConfig(body, policy);
      await checkResolvedHost('base_url', config.baseUrl);
      if (config.messageUrl !== undefined) await checkResolvedHost('message_url', config.messageUrl);
      const view = await upstreams.put(applicationId, config, deps.clock());
      // a new configuration starts with a closed circuit (in this process; others reset on the changed base_url)
      circuits.forget(applicationId);
      return render(view);
    },

    async get(applicationId) {
      await requireProject(applicationId);
      const view = await upstreams.find(applicationId);
      if (!view) throw new ApiError('UPSTREAM_NOT_CONFIGURED');
      return render(view);
    },

    async find(applicationId) {
      const view = await upstreams.find(applicationId);
      return view && render(view);
    },

    async remove(applicationId) {
      await requireProject(applicationId);
      if (!(await upstreams.remove(applicationId))) throw new ApiError('UPSTREAM_NOT_CONFIGURED');
      circuits.forget(applicationId);
      return { application_id: applicationId, deleted: true };
    },

    async call(applicationId, req, log) {
      if (!deps.client) throw new Error('no provider client: this process does not call upstream providers');
      const credentials = await upstreams.credentials(applicationId);
      if (!credentials) throw new ApiError('UPSTREAM_NOT_CONFIGURED');
      const { baseUrl } = credentials;
      const provider = providerLabel(baseUrl);
      const admission = circuits.admit(applicationId, baseUrl);
      if (!admission.admitted) {
        deps.metrics?.upstreamCall(provider, 'circuit_open');
        throw circuitOpenError(admission.retryAfterMs);
      }
      const started = performance.now();
      const seconds = () => (performance.now() - started) / 1000;
      try {
        const answer = await deps.client.call(credentials, req);
        circuits.answered(applicationId, baseUrl);
        deps.metrics?.upstreamCall(provider, 'ok', seconds());
        return answer;
      } catch (err) {
        if (err instanceof GatewayUnavailableError) {
          const failure = { class: failureClass(err), message: err.message.slice(0, MAX_HEALTH_MESSAGE) };
          deps.metrics?.upstreamCall(provider, failure.class, seconds());
          if (circuits.failed(applicationId, baseUrl, failure)) {
            (log ?? deps.logger)?.warn(
              { application_id: applicationId, provider, failure: failure.message },
              'the upstream provider is not answering: its calls are held (9481) until a probe gets an answer',
            );
          }
          throw err;
        }
        if (!(err instanceof ProviderRefusedError)) throw err;
        // a catalog error is the provider's answer: it is up
        circuits.answered(applicationId, baseUrl);
        deps.metrics?.upstreamCall(provider, 'refused', seconds());
        if (!isProviderKeyError(err.body)) throw err;
        const first = await upstreams.recordKeyError(
          applicationId,
          { code: catalogNumber(err.body), errorCode: err.body.error_code, message: err.body.message },
          deps.clock(),
        );
        if (first) {
          (log ?? deps.logger)?.warn(
            { application_id: applicationId, provider_error_code: err.body.error_code, provider_code: err.body.code },
            'the upstream provider refused the project keys; fix the upstream configuration',
          );
        }
        throw new ApiError('UPSTREAM_KEYS_REFUSED', {
          payloadMessage: `the provider answered ${err.body.error_code}: ${err.body.message}`,
        });
      }
    },

    assertAvailable(applicationId) {
      const wait = circuits.blockedFor(applicationId);
      if (wait !== undefined) throw circuitOpenError(wait);
    },

    async gateway(applicationId, pg) {
      const pgs = await upstreams.routedPgs(applicationId);
      if (!pgs?.includes(pg)) return undefined;
      const call = (req: ProviderRequest) => service.call(applicationId, req);
      return {
        name: pg,
        card: createUpstreamCardGateway(call, pg),
        identity: createUpstreamIdentityGateway(call, pg),
        escrow: createUpstreamEscrowGateway(call),
      };
    },
  };
  return service;
}
