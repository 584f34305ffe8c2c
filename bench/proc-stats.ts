// What a benchmark reads of a process from /proc (Linux): CPU time, resident memory, its children.
import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time (user + system) in ms, from /proc (clock ticks of 10 ms): of a process, all threads; with `thread`, of that
 * one thread (a process's main thread has the process's id).
 */
export function cpuMs(pid: number | undefined, thread?: number): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`;
    const fields = readFileSync(stat, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

export function rssMb(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmRSS:'));
    return line ? Math.round(Number(line.split(/\s+/)[1]) / 1024) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** The child processes of a pid whose command line matches. */
export function childOf(parent: number, match: RegExp): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
      if (ppid !== parent) continue;
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (match.test(cmd)) return Number(entry);
    } catch {
      // the process ended while we looked
    }
  }
  return undefined;
}

/** VmRSS (now) and VmHWM (the peak since the process started) from /proc, in bytes; this process without a pid. */
export function memoryOf(pid: number | undefined): { rss: number; peak: number } {
  const field = (lines: string[], name: string) => {
    const line = lines.find((l) => l.startsWith(`${name}:`));
    return line ? Number(line.split(/\s+/)[1]) * 1024 : Number.NaN;
  };
  try {
    const lines = readFileSync(`/proc/${pid ?? 'self'}/status`, 'utf8').split('\n');
    return { rss: field(lines, 'VmRSS'), peak: field(lines, 'VmHWM') };
  } catch {
    return { rss: Number.NaN, peak: Number.NaN };
  }
}
