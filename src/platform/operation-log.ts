import type { Logger as TemporalLogger } from '@temporalio/common';
import type { BaseLogger } from 'pino';

/** Where a use case reports what it did: the request's logger in a route, the activity's in a worker. */
export type OperationLog = Pick<BaseLogger, 'info' | 'warn'>;

type PinoStyle = (objOrMessage: unknown, message?: string, ...args: unknown[]) => void;

/**
 * A Temporal logger (an activity's `Context.log`: `warn(message, meta)`) seen as pino's (`warn(meta, message)`), so a
 * use case logs the same way in a route and in an activity. Casting one to the other swapped the arguments: the
 * message became the metadata and the object the message.
 */
export function pinoStyleLog(log: Pick<TemporalLogger, 'info' | 'warn' | 'error'>): {
  readonly info: PinoStyle;
  readonly warn: PinoStyle;
  readonly error: PinoStyle;
} {
  const level =
    (write: (message: string, meta?: Record<string, unknown>) => void): PinoStyle =>
    (objOrMessage, message) => {
      if (typeof objOrMessage === 'string') write(objOrMessage);
      else if (objOrMessage instanceof Error) write(message ?? objOrMessage.message, { err: objOrMessage });
      else write(message ?? '', (objOrMessage ?? {}) as Record<string, unknown>);
    };
  return {
    info: level((m, meta) => log.info(m, meta)),
    warn: level((m, meta) => log.warn(m, meta)),
    error: level((m, meta) => log.error(m, meta)),
  };
}
