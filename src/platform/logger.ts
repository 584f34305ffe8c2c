// The one logger factory (pino). Redaction is the last line of defence: routes never log bodies,
// but if a card number, OTP, identity field or secret ends up in a logged object it is censored.
import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import pinoPretty from 'pino-pretty';

/** Field names that must never be written to a log, at any depth we redact. */
export const SENSITIVE_FIELDS = [
  'authorization',
  'cookie',
  'card_no',
  'card_pw',
  'card_identity_no',
  'card_number',
  'number',
  'password2',
  'identityNo',
  'identity_no',
  'otp',
  'ci',
  'di',
  'unique',
  'secret',
  'secret_key',
  'private_key',
  'client_key',
  'access_token',
  'admin_token',
  'adminToken',
  'token',
  'phone',
  'name',
  'username',
  'birth',
  'card',
] as const;

// pino's redact paths take one wildcard per segment; cover the depths our objects have.
function redactPaths(): string[] {
  const paths: string[] = [];
  for (const field of SENSITIVE_FIELDS) {
    paths.push(field, `*.${field}`, `*.*.${field}`, `*.*.*.${field}`);
  }
  paths.push('req.headers.authorization', 'req.headers.cookie', 'req.headers["x-api-key"]');
  return paths;
}

/** Request headers censored when a request object is logged. */
const SENSITIVE_HEADERS = ['authorization', 'cookie', 'x-api-key'] as const;
/** Every name a redaction path ends in: a value with none of them among its fields has nothing to censor. */
const CENSORED_NAMES: ReadonlySet<string> = new Set<string>([...SENSITIVE_FIELDS, ...SENSITIVE_HEADERS]);
/** How deep below a line's top-level key the paths reach (`*.*.*.field`, `req.headers.x`). */
const CENSORED_DEPTH = 3;

/** Whether a censored name is a field of `value` at depth 1 to CENSORED_DEPTH (walked as the redactor walks). */
function holdsCensoredName(value: unknown, depth = 1): boolean {
  if (value === null || typeof value !== 'object') return false;
  for (const key in value) {
    if (CENSORED_NAMES.has(key)) return true;
    if (depth < CENSORED_DEPTH && holdsCensoredName((value as Record<string, unknown>)[key], depth + 1)) return true;
  }
  return false;
}

/**
 * Properties a database driver puts on its errors that carry the statement or the values in it: PGlite
 * adds the query, its parameters and options; node-postgres adds Postgres's detail ("Key (...)=(...)",
 * "Failing row contains (...)"), where and internalQuery. An error is logged without them.
 */
export const DB_ERROR_FIELDS = ['query', 'params', 'parameters', 'queryOptions', 'detail', 'where', 'internalQuery'] as const;

type Serialized = Record<string, unknown>;

// Copies rather than deletes below the top: nested objects may be the application's own.
function withoutDbFields(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== 'object' || depth > 4) return value;
  if (Array.isArray(value)) return value.map((item) => withoutDbFields(item, depth + 1));
  const copy: Serialized = {};
  for (const [key, item] of Object.entries(value)) {
    if (!(DB_ERROR_FIELDS as readonly string[]).includes(key)) copy[key] = withoutDbFields(item, depth + 1);
  }
  return copy;
}

function scrubDbFields(serialized: Serialized): Serialized {
  // the top object is pino's fresh copy of the error: its fields are dropped in place to keep its `raw`
  for (const [key, value] of Object.entries(serialized)) {
    if ((DB_ERROR_FIELDS as readonly string[]).includes(key)) delete serialized[key];
    else serialized[key] = withoutDbFields(value, 1);
  }
  return serialized;
}

/**
 * The error's name as its `type`, where the redaction cannot reach it: pino copies an error's own `name` (a class
 * field such as ApiError's) as `name`, which the `*.name` path meant for a person's name censored, so a logged
 * error read `"name":"[REDACTED]"`. The name is the class's (ApiError, TypeError), never a person's.
 */
function nameAsType(serialized: Serialized, err: unknown): void {
  const name = (err as { name?: unknown }).name;
  if (typeof name === 'string' && name !== '') serialized.type = name;
  if (serialized.name === name) delete serialized.name;
}

/** pino's error serializer (message, stack and causes), minus the query and its parameters at any nesting. */
export function serializeError(err: unknown): unknown {
  const serialized = pino.stdSerializers.err(err as Error) as unknown;
  if (serialized === null || typeof serialized !== 'object') return serialized;
  // only a real error's name: a plain object logged as `err` keeps its `name` field, and its censoring
  if (err instanceof Error) nameAsType(serialized as Serialized, err);
  return scrubDbFields(serialized as Serialized);
}

export type LogFormat = 'pretty' | 'json';

/** LOG_FORMAT when set; otherwise pretty for a person at a terminal, JSON for a log collector (a pipe or a file). */
export function resolveLogFormat(
  configured: LogFormat | undefined,
  stdoutIsTerminal: boolean = process.stdout.isTTY === true,
): LogFormat {
  return configured ?? (stdoutIsTerminal ? 'pretty' : 'json');
}

export interface CreateLoggerOptions {
  readonly level?: LoggerOptions['level'];
  /** JSON lines, or one readable line per event (pino-pretty); resolveLogFormat(undefined) unless set */
  readonly format?: LogFormat;
  /** where lines go; stdout by default (tests pass a capturing stream) */
  readonly destination?: DestinationStream;
}

/**
 * pino-pretty in this thread, after redaction and serializers ran: the same censored object, printed as
 * `time LEVEL (component): message key=value ...` on one line. Synchronous, so a fatal line is out before exit.
 */
function prettyStream(destination: DestinationStream | undefined): DestinationStream {
  return pinoPretty({
    colorize: destination === undefined && process.stdout.isTTY === true,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,service,component',
    messageFormat: '{if component}({component}) {end}{msg}',
    sync: true,
    ...(destination ? { destination } : {}),
  });
}

export function createLogger(opts: CreateLoggerOptions = {}): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? 'info',
    base: { service: 'paygate' },
    redact: { paths: redactPaths(), censor: '[REDACTED]' },
    serializers: { err: serializeError, error: serializeError },
  };
  const format = opts.format ?? (opts.destination ? 'json' : resolveLogFormat(undefined));
  const logger =
    format === 'pretty'
      ? pino(options, prettyStream(opts.destination))
      : opts.destination
        ? pino(options, opts.destination)
        : pino(options);
  return withRedactionWhereNeeded(logger);
}

type Stringify = (value: unknown, safe?: unknown) => string | undefined;

/**
 * pino runs the redaction of the `*.field` paths on every top-level value of a line and on every child logger's
 * bindings, strings and numbers included, and its redactor parses all of the paths again on each call: 18 % of the
 * API thread on a request that logs nothing (Fastify binds each request's id in a child logger), 6 % of a receipt
 * lookup (its request lines' `req` and `res`). A value that holds none of the censored names within the paths'
 * depth has nothing to censor: it is written by the logger's own stringify, as the redactor would write it; any
 * other value goes through the redactor. The keys that are censored whole (a top-level `card_no`) keep theirs.
 * The stringifier table is shared by the logger's children (pino copies it only for a child with its own redact).
 */
function withRedactionWhereNeeded(logger: Logger): Logger {
  const { stringifiersSym, stringifySym, wildcardFirstSym } = pino.symbols;
  const internals = logger as unknown as Record<string | symbol, unknown>;
  const stringifiers = internals[stringifiersSym] as Record<string | symbol, Stringify | undefined>;
  const stringify = internals[stringifySym] as Stringify;
  for (const key of [wildcardFirstSym, ...Object.keys(stringifiers)]) {
    const redacting = stringifiers[key];
    if (!redacting || (typeof key === 'string' && CENSORED_NAMES.has(key))) continue;
    stringifiers[key] = (value, safe) => (holdsCensoredName(value) ? redacting(value, safe) : stringify(value, safe));
  }
  return logger;
}

export type { Logger } from 'pino';
