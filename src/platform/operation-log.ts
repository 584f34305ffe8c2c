import type { BaseLogger } from 'pino';

/** Where a use case reports what it did: the request's logger in a route, the activity's in a worker. */
export type OperationLog = Pick<BaseLogger, 'info' | 'warn'>;
