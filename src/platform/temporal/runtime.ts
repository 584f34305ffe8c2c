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
  /**
   * Whether the process is stopping: the core's complaints about the engine going away then (a Ctrl-C reaches the
   * embedded engine too, which may end before the worker's last calls) are expected, and logged at debug.
   */
  readonly stopping?: () => boolean;
}

/** What the core says when the engine is gone while the worker stops: a normal stop's noise, not a fault. */
const STOPPING_NOISE = /shutdown_worker|GoAway|transport error|connection (was )?(reset|refused|closed)|Unavailable|broken pipe/i;

/**
 * Installs the Temporal SDK's Runtime, once per process: its logs (worker, core) go into our redacting pino
 * logger, and with `metricsBindAddress` its metrics go to a Prometheus exporter of its own.
 */
export function installTemporalLogger(logger: Logger, opts: TemporalRuntimeOptions = {}): void {
  const temporalLogger = logger.child({ component: 'temporal-sdk' });
  Runtime.install({
    logger: new DefaultLogger('INFO', (entry) => {
      const quiet = entry.level === 'WARN' && opts.stopping?.() === true && STOPPING_NOISE.test(entry.message);
      temporalLogger[quiet ? 'debug' : pinoLevel[entry.level]](entry.meta ?? {}, entry.message);
    }),
    telemetryOptions: {
      // the core's own lines (Rust) through this logger too: redacted, JSON or pretty as configured, never the
      // core's coloured console output
      logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
      ...(opts.metricsBindAddress
        ? {
            metrics: {
              // names as Prometheus users expect them: counters end in _total, durations in seconds
              prometheus: { bindAddress: opts.metricsBindAddress, countersTotalSuffix: true, useSecondsForDurations: true },
            },
          }
        : {}),
    },
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
