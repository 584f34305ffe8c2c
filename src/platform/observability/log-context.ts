// The ids a log line should carry, learned while a request is handled. The API runs each request's handler inside
// `runWithLogContext(request.log, ...)`; a service that learns an id (the receipt it created, the workflow it
// started) calls `bindLogIds`, and every later line of that request's logger carries it, the "request completed"
// line included. Outside a request (activities, the CLI) there is no context and the call does nothing.
import { AsyncLocalStorage } from 'node:async_hooks';

/** The ids a request's log lines may carry; never anything sensitive. */
export interface LogIds {
  readonly receipt_id?: string;
  readonly delivery_id?: string;
  readonly schedule_id?: string;
  readonly reserve_id?: string;
  readonly workflow_id?: string;
}

/** pino's child logger: its bindings can be extended in place. */
interface BindableLogger {
  bindings(): Record<string, unknown>;
  setBindings(bindings: Record<string, unknown>): void;
}

const context = new AsyncLocalStorage<BindableLogger>();

export function runWithLogContext<T>(logger: BindableLogger, fn: () => T): T {
  return context.run(logger, fn);
}

/** Adds the ids to the current request's logger; an id it already carries keeps its first value. */
export function bindLogIds(ids: LogIds): void {
  const logger = context.getStore();
  if (!logger) return;
  // pino's bindings() parses the logger's JSON bindings: not for a request whose path names no id (most do not)
  if (!Object.values(ids).some((value) => typeof value === 'string' && value !== '')) return;
  const bound = logger.bindings();
  const fresh: Record<string, string> = {};
  for (const [key, value] of Object.entries(ids)) {
    if (typeof value === 'string' && value !== '' && bound[key] === undefined) fresh[key] = value;
  }
  if (Object.keys(fresh).length > 0) logger.setBindings(fresh);
}
