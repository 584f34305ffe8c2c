// The one logger factory (pino). Redaction is the last line of defence: routes never log bodies,
// but if a card number, OTP, identity field or secret ends up in a logged object it is censored.
import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';

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

export interface CreateLoggerOptions {
  readonly level?: LoggerOptions['level'];
  /** where lines go; stdout by default (tests pass a capturing stream) */
  readonly destination?: DestinationStream;
}

export function createLogger(opts: CreateLoggerOptions = {}): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? 'info',
    base: { service: 'paygate' },
    redact: { paths: redactPaths(), censor: '[REDACTED]' },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

export type { Logger } from 'pino';
