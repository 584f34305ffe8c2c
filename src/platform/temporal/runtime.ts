import { DefaultLogger, Runtime, type LogLevel, type Logger as SdkLogger } from '@temporalio/worker';
import type { Logger } from '../logger.js';

const pinoLevel: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

export interface TemporalRuntimeOptions {
  /**
   * `host:port` where the SDK's own Prometheus exporter serves the worker's metrics (task slots, poll and
   * schedule-to-start latencies, sticky cache, activity and workflow task outcomes) at `/metrics`; unset: none.
   */
  readonly metricsBindAddress?: string;
}

/**
 * Installs the Temporal SDK's Runtime, once per process: its logs (worker, core) go into our redacting pino
 * logger, and with `metricsBindAddress` its metrics go to a Prometheus exporter of its own.
 */
export function installTemporalLogger(logger: Logger, opts: TemporalRuntimeOptions = {}): void {
  const temporalLogger = logger.child({ component: 'temporal-sdk' });
  Runtime.install({
    logger: new DefaultLogger('INFO', (entry) => {
      temporalLogger[pinoLevel[entry.level]](entry.meta ?? {}, entry.message);
    }),
    ...(opts.metricsBindAddress
      ? {
          telemetryOptions: {
            metrics: {
              // names as Prometheus users expect them: counters end in _total, durations in seconds
              prometheus: { bindAddress: opts.metricsBindAddress, countersTotalSuffix: true, useSecondsForDurations: true },
            },
          },
        }
      : {}),
  });
}

/**
 * Where the workflow bundler reports: its webpack summary (dozens of lines per start) is for debugging a bundle,
 * so everything it says at info goes to debug; its warnings and errors keep their level.
 */
export function createBundlerLogger(logger: Logger): SdkLogger {
  const bundlerLogger = logger.child({ component: 'workflow-bundler' });
  return new DefaultLogger('TRACE', (entry) => {
    const level = entry.level === 'INFO' ? 'debug' : pinoLevel[entry.level];
    bundlerLogger[level](entry.meta ?? {}, entry.message);
  });
}
