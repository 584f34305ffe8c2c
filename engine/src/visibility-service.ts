// List / Scan / Count of WorkflowService: the visibility query evaluated over the engine's runs in memory.
import type { Engine } from './engine.js';
import { invalid } from './errors.js';
import { Status, type Req } from './proto.js';
import type { Execution } from './state.js';
import {
  parseCountQuery,
  parseVisibilityQuery,
  payloadValue,
  type Predicate,
  QueryParseError,
  type VisibilityRecord,
} from './visibility.js';

const STATUS_NAMES: Record<number, string> = {
  [Status.WORKFLOW_EXECUTION_STATUS_RUNNING]: 'Running',
  [Status.WORKFLOW_EXECUTION_STATUS_COMPLETED]: 'Completed',
  [Status.WORKFLOW_EXECUTION_STATUS_FAILED]: 'Failed',
  [Status.WORKFLOW_EXECUTION_STATUS_CANCELED]: 'Canceled',
  [Status.WORKFLOW_EXECUTION_STATUS_TERMINATED]: 'Terminated',
  [Status.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW]: 'ContinuedAsNew',
  [Status.WORKFLOW_EXECUTION_STATUS_TIMED_OUT]: 'TimedOut',
};

const BUILTIN_FIELDS = new Set([
  'WorkflowId',
  'RunId',
  'WorkflowType',
  'ExecutionStatus',
  'StartTime',
  'CloseTime',
  'ExecutionTime',
  'TaskQueue',
  'HistoryLength',
  'BuildIds',
]);

function keywordPayload(value: string) {
  return {
    metadata: { encoding: Buffer.from('json/plain'), type: Buffer.from('Keyword') },
    data: Buffer.from(JSON.stringify(value)),
  };
}

export class VisibilityService {
  constructor(private readonly engine: Engine) {}

  private record(ex: Execution): VisibilityRecord {
    const s = ex.s;
    const rec: VisibilityRecord = {
      WorkflowId: s.workflowId,
      RunId: s.runId,
      WorkflowType: s.workflowType,
      ExecutionStatus: STATUS_NAMES[s.status] ?? 'Unspecified',
      StartTime: s.startTime,
      CloseTime: s.closeTime || null,
      ExecutionTime: s.executionTime,
      TaskQueue: s.taskQueue,
      HistoryLength: ex.history.length,
      BuildIds: s.buildIds?.length ? s.buildIds : null,
    };
    const types = this.engine.searchAttributeTypes();
    for (const [k, p] of Object.entries(s.searchAttributes?.indexedFields ?? {})) {
      const v = payloadValue(p);
      if (types.get(k) === 'Datetime' && typeof v === 'string') rec[k] = Date.parse(v);
      else if (Array.isArray(v) || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
        rec[k] = v as VisibilityRecord[string];
      }
    }
    return rec;
  }

  private parse<T>(parser: (query: string, known: (field: string) => boolean) => T, query: string | null | undefined): T {
    const types = this.engine.searchAttributeTypes();
    try {
      return parser(query ?? '', (f) => BUILTIN_FIELDS.has(f) || types.has(f));
    } catch (err) {
      if (err instanceof QueryParseError) throw invalid(`invalid query: ${err.message}`);
      throw err;
    }
  }

  /** Runs of the namespace matching the query, newest first. */
  private matching(namespace: string, query: string | null | undefined): Execution[] {
    return this.filter(namespace, this.parse(parseVisibilityQuery, query));
  }

  private filter(namespace: string, pred: Predicate): Execution[] {
    const out: Execution[] = [];
    for (const ex of this.engine.executions()) {
      if (ex.s.namespace === namespace && pred(this.record(ex))) out.push(ex);
    }
    out.sort((a, b) => b.s.startTime - a.s.startTime || (a.s.runId < b.s.runId ? -1 : 1));
    return out;
  }

  async ListWorkflowExecutions(r: Req<'ListWorkflowExecutionsRequest'>): Promise<Req<'ListWorkflowExecutionsResponse'>> {
    const all = this.matching(this.engine.ns(r.namespace), r.query);
    const offset = r.nextPageToken?.length ? Number(Buffer.from(r.nextPageToken).toString()) : 0;
    const size = r.pageSize && r.pageSize > 0 ? r.pageSize : 1000;
    const page = all.slice(offset, offset + size);
    return {
      executions: page.map((ex) => this.engine.executionInfo(ex)),
      nextPageToken: offset + size < all.length ? Buffer.from(String(offset + size)) : undefined,
    };
  }

  async ScanWorkflowExecutions(r: Req<'ScanWorkflowExecutionsRequest'>): Promise<Req<'ScanWorkflowExecutionsResponse'>> {
    return this.ListWorkflowExecutions(r);
  }

  async CountWorkflowExecutions(r: Req<'CountWorkflowExecutionsRequest'>): Promise<Req<'CountWorkflowExecutionsResponse'>> {
    const namespace = this.engine.ns(r.namespace);
    const { predicate, groupBy } = this.parse(parseCountQuery, r.query);
    const runs = this.filter(namespace, predicate);
    if (groupBy === undefined) return { count: runs.length };
    // grouped by ExecutionStatus: one group per status present, in the status enum's order
    const byStatus = new Map<number, number>();
    for (const ex of runs) byStatus.set(ex.s.status, (byStatus.get(ex.s.status) ?? 0) + 1);
    const groups = [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, count]) => ({ groupValues: [keywordPayload(STATUS_NAMES[status] ?? 'Unspecified')], count }));
    return { count: runs.length, groups };
  }
}
