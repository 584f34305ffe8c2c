// The engine's own tiny stderr logger: it must not depend on the host application's logging stack.
const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;
export type LogLevel = keyof typeof LEVELS;

let threshold: number = LEVELS.warn;
let json = false;

export function configureLog(opts: { level?: string; format?: string }): void {
  const level = (opts.level ?? '').toLowerCase();
  if (level in LEVELS) threshold = LEVELS[level as LogLevel];
  json = opts.format === 'json';
}

function write(level: LogLevel, msg: string, fields?: Record<string, unknown>): void {
  if (LEVELS[level] < threshold) return;
  const time = new Date().toISOString();
  if (json) {
    process.stderr.write(`${JSON.stringify({ time, level, msg, ...fields })}\n`);
  } else {
    const extra = fields ? ` ${JSON.stringify(fields)}` : '';
    process.stderr.write(`${time} ${level.toUpperCase()} temporal-devserver: ${msg}${extra}\n`);
  }
}

export const log = {
  /** Lets hot paths skip building debug fields nobody will see. */
  get debugEnabled(): boolean {
    return threshold <= LEVELS.debug;
  },
  debug: (msg: string, fields?: Record<string, unknown>) => write('debug', msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write('info', msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write('warn', msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write('error', msg, fields),
};
