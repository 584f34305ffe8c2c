// Reading history: GetWorkflowExecutionHistory (pages, the `waitNewEvent` long poll, the close-event filter)
// and GetWorkflowExecutionHistoryReverse. Poll responses page their history with the same tokens.
import { CALL_WAIT_MS, type Rpc } from './core.js';
import { notFound } from './errors.js';
import { enums } from './proto.js';
import { execKey, type Execution } from './state.js';

/** Events per history page (polls and GetWorkflowExecutionHistory). */
export const HISTORY_PAGE = 1000;

export function pageToken(runId: string, offset: number, upTo: number): Uint8Array {
  return Buffer.from(JSON.stringify({ runId, offset, upTo }));
}

export const getWorkflowExecutionHistory: Rpc<'GetWorkflowExecutionHistory'> = async (core, r, onCancel) => {
  const namespace = core.ns(r.namespace);
  let ex: Execution;
  let offset = 0;
  let upTo = Infinity;
  if (r.nextPageToken && r.nextPageToken.length > 0) {
    const t = JSON.parse(Buffer.from(r.nextPageToken).toString('utf8')) as { runId: string; offset: number; upTo: number };
    const found = core.runs.get(execKey(namespace, t.runId));
    if (!found) throw notFound('workflow execution not found');
    ex = found;
    offset = t.offset;
    upTo = t.upTo || Infinity;
  } else {
    ex = core.findRun(namespace, r.execution);
  }
  const closeOnly = r.historyEventFilterType === enums.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT;
  if (r.waitNewEvent) {
    const known = ex.history.length;
    await core.waitFor(
      execKey(namespace, ex.s.runId),
      CALL_WAIT_MS,
      () => {
        if (!core.isOpen(ex)) return true;
        if (!closeOnly && ex.history.length > (offset || known)) return true;
        return undefined;
      },
      onCancel,
    );
  }
  if (closeOnly) {
    if (core.isOpen(ex))
      return { history: { events: [] }, nextPageToken: Buffer.from(JSON.stringify({ runId: ex.s.runId, offset: 0, upTo: 0 })) };
    return { history: { events: ex.history.slice(-1) } };
  }
  const pageSize = r.maximumPageSize && r.maximumPageSize > 0 ? r.maximumPageSize : HISTORY_PAGE;
  const end = Math.min(ex.history.length, upTo, offset + pageSize);
  const events = ex.history.slice(offset, end);
  const more = end < Math.min(ex.history.length, upTo) || (r.waitNewEvent && core.isOpen(ex));
  return {
    history: { events },
    nextPageToken: more ? pageToken(ex.s.runId, end, upTo === Infinity ? 0 : upTo) : undefined,
  };
};

export const getWorkflowExecutionHistoryReverse: Rpc<'GetWorkflowExecutionHistoryReverse'> = async (core, r) => {
  const ex = core.findRun(core.ns(r.namespace), r.execution);
  const pageSize = r.maximumPageSize && r.maximumPageSize > 0 ? r.maximumPageSize : HISTORY_PAGE;
  const start = r.nextPageToken?.length ? Number(Buffer.from(r.nextPageToken).toString()) : ex.history.length;
  const from = Math.max(0, start - pageSize);
  return {
    history: { events: ex.history.slice(from, start).reverse() },
    nextPageToken: from > 0 ? Buffer.from(String(from)) : undefined,
  };
};
