// bench:flows's Temporal floor (issue 39, item 1): the floor driver (bench/floor.ts) as a process of its own with its
// engine beside it, measured with the same flows and callers as paygate, and the rows that set paygate's figures
// against it. Only the flows with Temporal actions have a floor (bench/floor-workflows.ts says why the others have none).
import { type ChildProcess, spawn } from 'node:child_process';
import { ROOT } from '../tools/child-processes.js';
import type { FloorFigures, FloorReply, FloorRequest } from './floor.js';

export const FLOOR_FLOWS: ReadonlySet<string> = new Set(['verification', 'shipping']);

export interface Floor {
  readonly pid: number | undefined;
  readonly enginePid: number | undefined;
  /** `flows` flows by `callers` callers at once */
  measure(flow: string, flows: number, callers: number): Promise<FloorFigures>;
  close(): Promise<void>;
}

/** paygate's side of a row: bench/flows.ts's measurements (CPU ms per flow by process). */
interface PaygateFigures {
  readonly p50: number;
  readonly p99: number;
  readonly cpu: Record<string, number>;
}

/** Starts bench/floor.ts (`dataDir`: where its engine keeps its journal); resolves once its worker runs. */
export async function startFloor(dataDir: string, timeoutMs = 300_000): Promise<Floor> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'bench/floor.ts', dataDir], {
    cwd: ROOT,
    // as bench/flows.ts starts paygate
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 200) output.splice(0, output.length - 200);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const tail = () => output.join('').slice(-3000);
  const pending = new Map<number, { resolve: (f: FloorFigures) => void; reject: (e: Error) => void }>();
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const enginePid = await new Promise<number | undefined>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`bench/floor.ts did not start within ${timeoutMs / 1000} s:\n${tail()}`));
    }, timeoutMs);
    child.on('message', (message: FloorReply) => {
      if (message.kind === 'ready') {
        clearTimeout(timer);
        resolve(message.enginePid);
        return;
      }
      const waiter = pending.get(message.id);
      pending.delete(message.id);
      if (message.kind === 'measured') waiter?.resolve(message.figures);
      else waiter?.reject(new Error(`the floor failed: ${message.message}`));
    });
    child.once('exit', (code, signal) => {
      exited = true;
      clearTimeout(timer);
      const err = new Error(`bench/floor.ts exited (${code ?? signal}):\n${tail()}`);
      reject(err);
      for (const waiter of pending.values()) waiter.reject(err);
      pending.clear();
    });
  });

  let nextId = 0;
  return {
    pid: child.pid,
    enginePid,
    measure(flow, flows, callers) {
      const id = ++nextId;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        child.send({ kind: 'measure', id, flow, flows, callers } satisfies FloorRequest);
      });
    },
    async close() {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exit;
      clearTimeout(timer);
    },
  };
}

/** As bench/flows.ts measures each side: a warm-up, one caller, then `callers` at once. */
export async function measureFloor(
  floor: Floor,
  flow: string,
  flows: number,
  callers: number,
): Promise<{ one: FloorFigures; many: FloorFigures }> {
  await floor.measure(flow, Math.min(5, flows), 1);
  const one = await floor.measure(flow, Math.max(1, Math.floor(flows / 4)), 1);
  const many = await floor.measure(flow, flows, callers);
  return { one, many };
}

export const FLOOR_TABLE_HEADER = [
  '| flow | floor | floor p50/p99, 1 caller | paygate p50/p99, 1 caller | floor p50/p99, many | floor CPU ms/flow | paygate CPU ms/flow | paygate − floor CPU ms/flow (of it, engine) | paygate / floor CPU |',
  '|---|---|---|---|---|---|---|---|---|',
];

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '-');
const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

/**
 * One flow's floor beside paygate: latencies, and the CPU per flow of every process (paygate's from its many-caller
 * measurement, all its processes; the floor's driver and engine) — the difference is paygate's own.
 */
export function floorRow(
  flow: string,
  floor: { one: FloorFigures; many: FloorFigures },
  paygate: { one: PaygateFigures; many: PaygateFigures },
): string {
  const floorCpu = floor.many.cpu.driver + floor.many.cpu.engine;
  const paygateCpu = sum(Object.values(paygate.many.cpu));
  const paygateEngine = paygate.many.cpu.engine ?? Number.NaN;
  return (
    `| ${flow} | ${fmt(floor.many.perSecond)} /s | ${fmt(floor.one.p50)} / ${fmt(floor.one.p99)} ms | ` +
    `${fmt(paygate.one.p50)} / ${fmt(paygate.one.p99)} ms | ${fmt(floor.many.p50)} / ${fmt(floor.many.p99)} ms | ` +
    `driver ${fmt(floor.many.cpu.driver)} + engine ${fmt(floor.many.cpu.engine)} = ${fmt(floorCpu)} | ${fmt(paygateCpu)} | ` +
    `${fmt(paygateCpu - floorCpu)} (engine ${fmt(paygateEngine - floor.many.cpu.engine)}) | ${fmt(paygateCpu / floorCpu, 2)} |`
  );
}
