// Configuration: read from the environment once at boot, validated with zod. A wrong value stops
// the process with a message naming the variable (see readConfigOrExit).
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { isIpOrCidr } from '../ip.js';
import { parseKeyringSpec } from '../security/keyring.js';

const booleanFlag = z
  .string()
  .trim()
  .toLowerCase()
  .refine((v) => ['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off'].includes(v), {
    message: 'expected one of true/false, 1/0, yes/no, on/off',
  })
  .transform((v) => ['1', 'true', 'yes', 'on'].includes(v));

const ipOrCidr = z.string().trim().refine(isIpOrCidr, { message: 'expected an IP address or CIDR' });

const ipOrCidrList = z
  .string()
  .transform((v) =>
    v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  )
  .pipe(z.array(ipOrCidr));

const DURATION_UNITS_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** the longest window a send limit may count over (rows are kept that long) */
const MAX_SEND_LIMIT_WINDOW_MS = 7 * DURATION_UNITS_MS.d;

/** At most `max` sends in any `windowMs` (a sliding window). */
export interface SendLimit {
  readonly max: number;
  readonly windowMs: number;
}

/**
 * `<count>/<duration>[,...]`, e.g. `6/10m,10/24h` (units s, m, h, d; windows up to 7 d), or `none` for no limit.
 * Each pair is a limit on its own; a send must pass them all.
 */
const sendLimitList = z
  .string()
  .trim()
  .toLowerCase()
  .transform((v, ctx): SendLimit[] => {
    if (v === 'none') return [];
    const limits: SendLimit[] = [];
    for (const part of v.split(',').map((p) => p.trim())) {
      const m = /^(\d{1,7})\/(\d{1,6})([smhd])$/.exec(part);
      const max = m ? Number(m[1]) : 0;
      const windowMs = m ? Number(m[2]) * DURATION_UNITS_MS[m[3] as keyof typeof DURATION_UNITS_MS] : 0;
      if (!m || max < 1 || windowMs < 1_000 || windowMs > MAX_SEND_LIMIT_WINDOW_MS) {
        ctx.addIssue({
          code: 'custom',
          message: `expected <count>/<duration>[,...] such as 6/10m,10/24h (count >= 1, duration 1s..7d with unit s, m, h or d), or none; got '${part.slice(0, 40)}'`,
        });
        return z.NEVER;
      }
      limits.push({ max, windowMs });
    }
    return limits;
  });

/**
 * The upstream provider calls whose deadline can be set on its own: `providerOperation` (src/upstream/rules.ts) names
 * each call paygate makes to a provider with one of these.
 */
export const UPSTREAM_OPERATIONS = [
  'issue_billing_key',
  'charge',
  'cancel',
  'destroy_billing_key',
  'lookup',
  'request_verification',
  'resend_otp',
  'confirm_otp',
  'shipping_start',
] as const;
export type UpstreamOperation = (typeof UPSTREAM_OPERATIONS)[number];
/** A whole provider call (connect, headers and body) fits a card charge's answer time. */
export const DEFAULT_UPSTREAM_DEADLINE_MS = 15_000;
/**
 * At most this per call: a merchant request makes at most two provider calls in a row (a relayed escrow payment's
 * lookup and its shipping start), so its answer stays under the API's socket idle timeout (75 s, src/api/app.ts).
 */
export const MAX_UPSTREAM_DEADLINE_MS = 30_000;
const upstreamDeadlineMs = z.coerce.number().int().min(100).max(MAX_UPSTREAM_DEADLINE_MS);

/** `<operation>=<ms>[,...]`, e.g. `charge=20000,lookup=5000`: deadlines that differ from UPSTREAM_DEADLINE_MS. */
const upstreamDeadlineList = z
  .string()
  .trim()
  .transform((v, ctx): Partial<Record<UpstreamOperation, number>> => {
    const deadlines: Partial<Record<UpstreamOperation, number>> = {};
    for (const part of v.split(',').map((p) => p.trim())) {
      const m = /^([a-z_]+)=(\d{1,6})$/.exec(part);
      const operation = m?.[1] as UpstreamOperation | undefined;
      const ms = Number(m?.[2]);
      if (!m || !UPSTREAM_OPERATIONS.includes(operation!) || !upstreamDeadlineMs.safeParse(ms).success) {
        ctx.addIssue({
          code: 'custom',
          message: `expected <operation>=<ms>[,...] with an operation of ${UPSTREAM_OPERATIONS.join(', ')} and 100..${MAX_UPSTREAM_DEADLINE_MS} ms; got '${part.slice(0, 40)}'`,
        });
        return z.NEVER;
      }
      deadlines[operation!] = ms;
    }
    return deadlines;
  });

const postgresUrl = z
  .string()
  .trim()
  .refine((v) => /^postgres(ql)?:\/\//.test(v) && URL.canParse(v), { message: 'expected a postgres:// URL' });

/** The environment variables paygate reads, with their rules and defaults. */
const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  // loopback: a laptop's sandbox (its API, dashboard and admin token) is not on the local network unless asked
  HOST: z.string().trim().min(1).default('127.0.0.1'),
  ADMIN_TOKEN: z.string().trim().min(16, 'must be at least 16 characters').optional(),
  DATA_DIR: z.string().trim().min(1).default('./.data'),
  DATABASE_URL: postgresUrl.optional(),
  TEMPORAL_ADDRESS: z
    .string()
    .trim()
    .regex(/^[^\s:/]+:\d{1,5}$/, 'expected host:port')
    .optional(),
  TEMPORAL_NAMESPACE: z.string().trim().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().trim().min(1).default('paygate'),
  TEMPORAL_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(1).max(1_000_000).optional(),
  PAYGATE_SANDBOX: booleanFlag.optional(),
  TRUSTED_PROXIES: ipOrCidrList.default([]),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(['pretty', 'json']))
    .optional(),
  TEMPORAL_METRICS_ADDRESS: z
    .string()
    .trim()
    .regex(
      /^(\[[0-9A-Fa-f:.]+\]|[^\s:/[\]]+):\d{1,5}$/,
      'expected host:port (the SDK exporter binds an IP address, e.g. 127.0.0.1:9464)',
    )
    .optional(),
  WORKER_METRICS_HOST: z.string().trim().min(1).default('127.0.0.1'),
  WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  PUBLIC_BASE_URL: z.url().optional(),
  ENCRYPTION_KEYS: z
    .string()
    .trim()
    .superRefine((v, ctx) => {
      try {
        parseKeyringSpec(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    })
    .optional(),
  SANDBOX_GATEWAY_URL: z.url().optional(),
  SANDBOX_SECRET: z.string().trim().min(16, 'must be at least 16 characters').optional(),
  SANDBOX_TOKEN: z.string().trim().min(16, 'must be at least 16 characters').optional(),
  ADMIN_HOST: z.string().trim().min(1).default('127.0.0.1'),
  ADMIN_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  TEMPORAL_TLS_CERT: z.string().trim().min(1).optional(),
  TEMPORAL_TLS_KEY: z.string().trim().min(1).optional(),
  TEMPORAL_TLS_CA: z.string().trim().min(1).optional(),
  TEMPORAL_TLS_SERVER_NAME: z.string().trim().min(1).optional(),
  TEMPORAL_API_KEY: z.string().trim().min(1).optional(),
  ENGINE_TOKEN: z.string().trim().min(16, 'must be at least 16 characters').optional(),
  VERIFICATION_SEND_LIMITS_PER_PHONE: sendLimitList.optional(),
  VERIFICATION_SEND_LIMITS_PER_PROJECT: sendLimitList.optional(),
  UPSTREAM_DEADLINE_MS: upstreamDeadlineMs.default(DEFAULT_UPSTREAM_DEADLINE_MS),
  UPSTREAM_DEADLINES_MS: upstreamDeadlineList.optional(),
  UPSTREAM_CIRCUIT_FAILURES: z.coerce.number().int().min(1).max(1_000).optional(),
  UPSTREAM_CIRCUIT_OPEN_SECONDS: z.coerce.number().int().min(1).max(3_600).optional(),
});

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly adminToken: string;
  /** true when ADMIN_TOKEN was unset and a random one was generated for this boot */
  readonly adminTokenGenerated: boolean;
  readonly dataDir: string;
  /** unset: embedded PGlite under dataDir */
  readonly databaseUrl: string | undefined;
  /** unset: the embedded Temporal engine */
  readonly temporalAddress: string | undefined;
  readonly temporalNamespace: string;
  readonly taskQueue: string;
  /** the worker's sticky cache of workflow runs; unset: DEFAULT_MAX_CACHED_WORKFLOWS (src/platform/temporal/worker.ts) */
  readonly maxCachedWorkflows: number | undefined;
  /** sandbox gateways served; defaults to on only when both DATABASE_URL and TEMPORAL_ADDRESS are unset */
  readonly sandbox: boolean;
  /** PAYGATE_SANDBOX=true with a production database or Temporal: the start-up log warns */
  readonly sandboxForced: boolean;
  /** proxies whose X-Forwarded-For is believed (IPs or CIDRs) */
  readonly trustedProxies: readonly string[];
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** LOG_FORMAT; unset: pretty when stdout is a terminal, JSON otherwise (resolveLogFormat in src/platform/logger.ts) */
  readonly logFormat: 'pretty' | 'json' | undefined;
  /** `host:port` of the Temporal SDK's Prometheus exporter (worker metrics), in processes that run a worker; unset: off */
  readonly temporalMetricsAddress: string | undefined;
  /** the standalone worker's own metrics listener (paygate's series of that process); unset: none */
  readonly workerMetrics: { readonly host: string; readonly port: number } | undefined;
  /** {base_url}; required with sandbox off; in sandbox mode unset means http://127.0.0.1:PORT */
  readonly publicBaseUrl: string | undefined;
  /** `kid:base64key,...` (first is current); unset: a key kept under DATA_DIR (see src/platform/config/keys.ts) */
  readonly encryptionKeys: string | undefined;
  /** a sandbox gateway server run as its own process; unset: started in-process on loopback */
  readonly sandboxGatewayUrl: string | undefined;
  /** signs sandbox billing keys, derives sandbox CI / DI; unset: generated once into DATA_DIR (src/sandbox/secret.ts) */
  readonly sandboxSecret: string | undefined;
  /** Bearer token of the sandbox's internal routes; unset: random per process (in-process sandbox only) */
  readonly sandboxToken: string | undefined;
  /** set: /admin/v1/* is served only on this listener (ADMIN_HOST, default loopback) */
  readonly admin: { readonly host: string; readonly port: number } | undefined;
  /** TLS to the Temporal frontend (file paths); unset: plain gRPC unless an API key is set */
  readonly temporalTls: TemporalTlsConfig | undefined;
  /** Temporal Cloud API key (implies TLS) */
  readonly temporalApiKey: string | undefined;
  /**
   * the embedded engine's credential (every gRPC call presents it); unset: generated once into DATA_DIR
   * (src/platform/config/engine-token.ts). Unused with TEMPORAL_ADDRESS.
   */
  readonly engineToken: string | undefined;
  /**
   * Caps on verification SMS sends (requests and resends) per phone and per project; [] is no cap. Unset: the
   * verification area's defaults (DEFAULT_SEND_LIMITS in src/verification/send-limit-rules.ts).
   */
  readonly verificationSendLimits: {
    readonly perPhone: readonly SendLimit[] | undefined;
    readonly perProject: readonly SendLimit[] | undefined;
  };
  /**
   * The circuit of each project's upstream provider (src/upstream/circuit.ts): it opens after `failures` failed calls
   * in a row (no answer, a timeout, a 5xx without a catalog body) and stays open `openSeconds` before a probe. Unset:
   * the upstream area's defaults (DEFAULT_CIRCUIT_SETTINGS).
   */
  readonly upstreamCircuit: { readonly failures: number | undefined; readonly openSeconds: number | undefined };
  /** the whole-call deadline of each upstream provider call: UPSTREAM_DEADLINE_MS, and UPSTREAM_DEADLINES_MS per operation */
  readonly upstreamDeadlines: UpstreamDeadlines;
}

export interface UpstreamDeadlines {
  readonly defaultMs: number;
  readonly byOperation: Partial<Record<UpstreamOperation, number>>;
}

export interface TemporalTlsConfig {
  readonly certPath?: string;
  readonly keyPath?: string;
  readonly caPath?: string;
  readonly serverName?: string;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: readonly { variable: string; message: string }[]) {
    super(`invalid configuration: ${problems.map((p) => `${p.variable}: ${p.message}`).join('; ')}`);
  }
}

type Env = Record<string, string | undefined>;

/** Parses an environment object. Empty strings count as unset. Throws ConfigError naming each bad variable. */
export function parseConfig(env: Env): Config {
  const present: Env = {};
  for (const key of Object.keys(envSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') present[key] = value;
  }
  const result = envSchema.safeParse(present);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => ({ variable: String(issue.path[0] ?? 'environment'), message: issue.message })),
    );
  }
  const e = result.data;
  const problems: { variable: string; message: string }[] = [];
  // Laptop mode only: a real database or Temporal cluster means production unless said otherwise.
  const laptop = e.DATABASE_URL === undefined && e.TEMPORAL_ADDRESS === undefined;
  const sandbox = e.PAYGATE_SANDBOX ?? laptop;
  if (!sandbox && e.PUBLIC_BASE_URL === undefined) {
    problems.push({ variable: 'PUBLIC_BASE_URL', message: 'required when sandbox mode is off (gateway_url is built from it)' });
  }
  if ((e.TEMPORAL_TLS_CERT === undefined) !== (e.TEMPORAL_TLS_KEY === undefined)) {
    const missing = e.TEMPORAL_TLS_CERT === undefined ? 'TEMPORAL_TLS_CERT' : 'TEMPORAL_TLS_KEY';
    problems.push({ variable: missing, message: 'TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY are set together (mTLS) or not at all' });
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const tlsSet = [e.TEMPORAL_TLS_CERT, e.TEMPORAL_TLS_CA, e.TEMPORAL_TLS_SERVER_NAME].some((v) => v !== undefined);
  const adminToken = e.ADMIN_TOKEN ?? randomBytes(24).toString('base64url');
  return {
    port: e.PORT,
    host: e.HOST,
    adminToken,
    adminTokenGenerated: e.ADMIN_TOKEN === undefined,
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    temporalAddress: e.TEMPORAL_ADDRESS,
    temporalNamespace: e.TEMPORAL_NAMESPACE,
    taskQueue: e.TEMPORAL_TASK_QUEUE,
    maxCachedWorkflows: e.TEMPORAL_MAX_CACHED_WORKFLOWS,
    sandbox,
    sandboxForced: sandbox && !laptop,
    trustedProxies: e.TRUSTED_PROXIES,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    temporalMetricsAddress: e.TEMPORAL_METRICS_ADDRESS,
    workerMetrics: e.WORKER_METRICS_PORT === undefined ? undefined : { host: e.WORKER_METRICS_HOST, port: e.WORKER_METRICS_PORT },
    publicBaseUrl: e.PUBLIC_BASE_URL,
    encryptionKeys: e.ENCRYPTION_KEYS,
    sandboxGatewayUrl: e.SANDBOX_GATEWAY_URL,
    sandboxSecret: e.SANDBOX_SECRET,
    sandboxToken: e.SANDBOX_TOKEN,
    admin: e.ADMIN_PORT === undefined ? undefined : { host: e.ADMIN_HOST, port: e.ADMIN_PORT },
    temporalTls: tlsSet
      ? {
          ...(e.TEMPORAL_TLS_CERT ? { certPath: e.TEMPORAL_TLS_CERT } : {}),
          ...(e.TEMPORAL_TLS_KEY ? { keyPath: e.TEMPORAL_TLS_KEY } : {}),
          ...(e.TEMPORAL_TLS_CA ? { caPath: e.TEMPORAL_TLS_CA } : {}),
          ...(e.TEMPORAL_TLS_SERVER_NAME ? { serverName: e.TEMPORAL_TLS_SERVER_NAME } : {}),
        }
      : undefined,
    temporalApiKey: e.TEMPORAL_API_KEY,
    engineToken: e.ENGINE_TOKEN,
    verificationSendLimits: {
      perPhone: e.VERIFICATION_SEND_LIMITS_PER_PHONE,
      perProject: e.VERIFICATION_SEND_LIMITS_PER_PROJECT,
    },
    upstreamDeadlines: { defaultMs: e.UPSTREAM_DEADLINE_MS, byOperation: e.UPSTREAM_DEADLINES_MS ?? {} },
    upstreamCircuit: { failures: e.UPSTREAM_CIRCUIT_FAILURES, openSeconds: e.UPSTREAM_CIRCUIT_OPEN_SECONDS },
  };
}

/** For entry points: parse process.env once; on a bad value print what is wrong and exit 1. */
export function readConfigOrExit(env: Env = process.env): Config {
  try {
    return parseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      // the logger is configured from this config, so it cannot report its own failure
      process.stderr.write(
        `paygate: invalid configuration\n${err.problems.map((p) => `  ${p.variable}: ${p.message}`).join('\n')}\n`,
      );
      process.exit(1);
    }
    throw err;
  }
}

/**
 * {base_url} as the outside world reaches this process: PUBLIC_BASE_URL, or loopback on PORT in sandbox mode (where
 * PUBLIC_BASE_URL may be unset). Never taken from a request's Host header. The one derivation: gateway_url, the
 * notification URLs given to upstream providers and the OpenAPI document's `servers` all read it.
 */
export function publicBaseUrlOf(config: Pick<Config, 'publicBaseUrl' | 'port'>): string {
  return (config.publicBaseUrl ?? `http://127.0.0.1:${config.port}`).replace(/\/+$/, '');
}
