// A use case logs pino-style (`warn(meta, message)`); inside an activity its logger is Temporal's
// (`warn(message, meta)`). pinoStyleLog puts each argument where Temporal expects it.
import { describe, expect, it } from 'vitest';
import { pinoStyleLog } from '../../src/platform/operation-log.js';

function recordingTemporalLog() {
  const calls: { level: string; message: string; meta: unknown }[] = [];
  const at = (level: string) => (message: string, meta?: Record<string, unknown>) => {
    calls.push({ level, message, meta });
  };
  return { calls, log: { info: at('info'), warn: at('warn'), error: at('error') } };
}

describe('pinoStyleLog', () => {
  it('hands Temporal the message first and the fields as its metadata', () => {
    const { calls, log } = recordingTemporalLog();
    pinoStyleLog(log).warn({ delivery_id: 'd1' }, 'webhook delivery saved but not queued yet');
    expect(calls).toEqual([{ level: 'warn', message: 'webhook delivery saved but not queued yet', meta: { delivery_id: 'd1' } }]);
  });

  it('takes a message alone, and an error as its metadata', () => {
    const { calls, log } = recordingTemporalLog();
    const adapted = pinoStyleLog(log);
    adapted.info('cancel recorded');
    const err = new Error('boom');
    adapted.error(err, 'refund failed');
    adapted.error(err);
    expect(calls).toEqual([
      { level: 'info', message: 'cancel recorded', meta: undefined },
      { level: 'error', message: 'refund failed', meta: { err } },
      { level: 'error', message: 'boom', meta: { err } },
    ]);
  });
});
