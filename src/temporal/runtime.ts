import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from '../logger.js';

const pinoLevel: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** Routes the Temporal SDK's own logs (worker, core) into our redacting pino logger. Once per process. */
export function installTemporalLogger(logger: Logger): void {
  const temporalLogger = logger.child({ component: 'temporal-sdk' });
  Runtime.install({
    logger: new DefaultLogger('INFO', (entry) => {
      temporalLogger[pinoLevel[entry.level]](entry.meta ?? {}, entry.message);
    }),
  });
}
