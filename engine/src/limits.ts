// Temporal's size limits, from dynamic config (`limit.blobSize.*`, `limit.memoSize.*`, `limit.historySize.error`,
// `limit.historyCount.error`): where Temporal refuses an oversized payload, this server refuses it the same way
// instead of storing it. Sizes are the protobuf encoding's, as Temporal measures them (`proto.Size`); a payload is
// refused only when it is above both the warn and the error limit, as Temporal's CheckEventBlobSizeLimit does.
//
// - Requests (the frontend's checks, `REQUEST_LIMITS`, applied by engine.ts before the handler): an oversized
//   start input, memo, signal input or query argument is INVALID_ARGUMENT; an oversized workflow-task failure is
//   replaced by a server failure carrying a truncated copy; an oversized query answer becomes a failed answer.
// - Workflow-task completions: a command (or update message) with an oversized payload fails the task with the
//   command's BAD_..._ATTRIBUTES cause and terminates the workflow; the worker is answered INVALID_ARGUMENT.
// - Activity reports (activity-tasks.ts): an oversized result or cancel details fail the activity (not retried),
//   oversized heartbeat details fail it too, an oversized failure is truncated.
// - After every change, a running workflow whose history passed `limit.historyCount.error` or
//   `limit.historySize.error` is terminated (and the request that made it pass is INVALID_ARGUMENT); past the
//   warn limits it is logged.
import { historySizeBytes, type EngineCore, type RpcName, type RpcRequest } from './core.js';
import { invalid } from './errors.js';
import { terminate } from './lifecycle.js';
import { log } from './log.js';
import {
  CommandType,
  EventType,
  enums,
  pb,
  type temporal,
  type Command,
  type Failure,
  type Memo,
  type Message,
  type Payload,
  type Payloads,
} from './proto.js';
import { answerAttachedQueries, dispatchPendingQueries } from './queries.js';
import { execKey, type Execution } from './state.js';
import { decodeToken } from './tokens.js';
import { appendTaskOutcome, startedWorkflowTask } from './workflow-tasks.js';

export const BLOB_SIZE_EXCEEDS_LIMIT = 'Blob data size exceeds limit.';
export const MEMO_SIZE_EXCEEDS_LIMIT = 'Memo size exceeds limit.';
/** Failure messages Temporal records when it replaces an oversized report (common/util.go). */
export const FailureReason = {
  completeResult: 'Complete result exceeds size limit.',
  failure: 'Failure exceeds size limit.',
  cancelDetails: 'Cancel details exceed size limit.',
  heartbeat: 'Heartbeat details exceed size limit.',
  historySize: 'Workflow history size exceeds limit.',
  historyCount: 'Workflow history count exceeds limit.',
} as const;
/** The identity Temporal's history service writes on what it does by itself (a forced termination). */
const HISTORY_SERVICE_IDENTITY = 'history-service';

// ---------------------------------------------------------------- protobuf sizes

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    size++;
  }
  return size;
}

/** A length-delimited field: tag, length, bytes (proto3 leaves empty ones out). */
function delimited(length: number): number {
  return length === 0 ? 0 : 1 + varintSize(length) + length;
}

function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** A map entry (key field 1, message/bytes field 2) framed as an element of its map field. */
function mapEntry(key: string, valueLength: number): number {
  const entry = delimited(utf8Length(key)) + 1 + varintSize(valueLength) + valueLength;
  return 1 + varintSize(entry) + entry;
}

/** Encoded size of a temporal.api.common.v1.Payload, without encoding it. */
export function payloadSize(p: Payload): number {
  if (p.externalPayloads?.length) return pb.temporal.api.common.v1.Payload.encode(p as temporal.api.common.v1.IPayload).len;
  let size = delimited(p.data?.byteLength ?? 0);
  for (const [k, v] of Object.entries(p.metadata ?? {})) size += mapEntry(k, v?.byteLength ?? 0);
  return size;
}

/** Encoded size of a temporal.api.common.v1.Payloads (0 when absent). */
export function payloadsSize(p: Payloads | null | undefined): number {
  let size = 0;
  for (const payload of p?.payloads ?? []) {
    const n = payloadSize(payload);
    size += 1 + varintSize(n) + n;
  }
  return size;
}

/** Encoded size of a memo (map<string, Payload> fields = 1). */
export function memoSize(m: Memo | null | undefined): number {
  let size = 0;
  for (const [k, v] of Object.entries(m?.fields ?? {})) size += mapEntry(k, payloadSize(v));
  return size;
}

function failureSize(f: Failure | null | undefined): number {
  return f ? pb.temporal.api.failure.v1.Failure.encode(f as temporal.api.failure.v1.IFailure).len : 0;
}

/** Temporal's GetPayloadsMapSize (marker details): key length plus each Payloads' size. */
function payloadsMapSize(m: Record<string, Payloads> | null | undefined): number {
  let size = 0;
  for (const [k, v] of Object.entries(m ?? {})) size += utf8Length(k) + payloadsSize(v);
  return size;
}

/** Temporal's payloadsMapSize (search attributes, memo upserts): key length plus data length. */
function payloadDataMapSize(m: Record<string, Payload> | null | undefined): number {
  let size = 0;
  for (const [k, v] of Object.entries(m ?? {})) size += utf8Length(k) + (v.data?.byteLength ?? 0);
  return size;
}

/** google.protobuf.Any's encoded size (a protocol message body). */
function anySize(a: { type_url?: string | null; value?: Uint8Array | null } | null | undefined): number {
  return a ? delimited(utf8Length(a.type_url ?? '')) + delimited(a.value?.byteLength ?? 0) : 0;
}

// ---------------------------------------------------------------- the checks

export function blobTooLarge(core: EngineCore, size: number): boolean {
  const c = core.dynamicConfig;
  return size > c.blobSizeLimitWarn && size > c.blobSizeLimitError;
}

function memoTooLarge(core: EngineCore, size: number): boolean {
  const c = core.dynamicConfig;
  return size > c.memoSizeLimitWarn && size > c.memoSizeLimitError;
}

function checkBlob(core: EngineCore, size: number): void {
  if (blobTooLarge(core, size)) throw invalid(BLOB_SIZE_EXCEEDS_LIMIT);
}

/** A start's input and memo, as Temporal's ValidateStart checks them. */
function checkStart(core: EngineCore, r: { input?: Payloads | null; memo?: Memo | null }): void {
  checkBlob(core, payloadsSize(r.input));
  if (memoTooLarge(core, memoSize(r.memo))) throw invalid(MEMO_SIZE_EXCEEDS_LIMIT);
}

/** A failure of the server's own making (Temporal's NewServerFailure). */
export function serverFailure(message: string, nonRetryable: boolean, cause?: Failure | null): Failure {
  return { message, serverFailureInfo: { nonRetryable }, cause: cause ?? undefined };
}

/**
 * A copy of `f` that fits in about `maxSize` bytes, as Temporal's failure.Truncate makes it: the failure info
 * kept only for application (type, non-retryable) and server failures, then source, message and stack trace
 * cut to what is left, then the cause the same way (at most 20 deep).
 */
export function truncateFailure(f: Failure | null | undefined, maxSize: number, depth = 20): Failure | undefined {
  if (!f) return undefined;
  let left = maxSize;
  const cut = (s: string | null | undefined): string => {
    const out = truncateUtf8(s ?? '', left);
    left -= Buffer.byteLength(out, 'utf8');
    if (out) left -= 4;
    return out;
  };
  const out: Failure = {};
  if (f.applicationFailureInfo) {
    out.applicationFailureInfo = {
      nonRetryable: f.applicationFailureInfo.nonRetryable,
      type: cut(f.applicationFailureInfo.type),
    };
    left -= 8;
  } else if (f.serverFailureInfo) {
    out.serverFailureInfo = { nonRetryable: f.serverFailureInfo.nonRetryable };
    left -= 4;
  }
  out.source = cut(f.source);
  out.message = cut(f.message);
  out.stackTrace = cut(f.stackTrace);
  if (f.cause && left > 4 && depth > 0) out.cause = truncateFailure(f.cause, left - 4, depth - 1);
  return out;
}

/** The longest prefix of `s` of at most `maxBytes` UTF-8 bytes that does not split a character. */
function truncateUtf8(s: string, maxBytes: number): string {
  if (maxBytes <= 0) return '';
  const bytes = Buffer.from(s, 'utf8');
  if (bytes.length <= maxBytes) return s;
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

/** Replaces an oversized failure report as Temporal's frontend does; returns the replacement, or null if it fits. */
export function oversizedFailure(core: EngineCore, f: Failure | null | undefined): Failure | null {
  if (!f || !blobTooLarge(core, failureSize(f))) return null;
  return serverFailure(FailureReason.failure, true, truncateFailure(f, core.dynamicConfig.blobSizeLimitWarn));
}

// ---------------------------------------------------------------- requests (Temporal's frontend checks)

type RequestCheck<M extends RpcName> = (core: EngineCore, r: RpcRequest<M>) => void | Promise<void>;

/** Checks (and, where Temporal rewrites a report, rewrites) a request before its handler runs. */
export const REQUEST_LIMITS: { [M in RpcName]?: RequestCheck<M> } = {
  StartWorkflowExecution: (core, r) => checkStart(core, r),
  SignalWithStartWorkflowExecution: (core, r) => {
    checkStart(core, r);
    checkBlob(core, payloadsSize(r.signalInput));
  },
  ExecuteMultiOperation: (core, r) => {
    for (const op of r.operations ?? []) if (op.startWorkflow) checkStart(core, op.startWorkflow);
  },
  SignalWorkflowExecution: (core, r) => checkBlob(core, payloadsSize(r.input)),
  QueryWorkflow: (core, r) => checkBlob(core, payloadsSize(r.query?.queryArgs)),
  RespondQueryTaskCompleted: (core, r) => {
    if (blobTooLarge(core, payloadsSize(r.queryResult))) {
      r.completedType = enums.QueryResultType.QUERY_RESULT_TYPE_FAILED;
      r.queryResult = null;
      r.errorMessage = BLOB_SIZE_EXCEEDS_LIMIT;
    }
  },
  RespondWorkflowTaskFailed: (core, r) => {
    const replaced = oversizedFailure(core, r.failure);
    if (replaced) r.failure = replaced;
  },
  RespondWorkflowTaskCompleted: refuseOversizedCompletion,
};

// ---------------------------------------------------------------- workflow-task completions

interface Oversized {
  cause: number;
  message: string;
}

/**
 * A completion whose commands or messages carry an oversized payload: the task fails with the command's cause, the
 * workflow is terminated with the same message, and the worker is answered INVALID_ARGUMENT — Temporal's
 * terminateWorkflow path. Oversized query answers it carries become failed answers first.
 */
async function refuseOversizedCompletion(core: EngineCore, r: RpcRequest<'RespondWorkflowTaskCompleted'>): Promise<void> {
  const results = r.queryResults;
  if (results) {
    for (const res of Object.values(results)) {
      if (blobTooLarge(core, payloadsSize(res.answer))) {
        res.resultType = enums.QueryResultType.QUERY_RESULT_TYPE_FAILED;
        res.answer = null;
        res.errorMessage = BLOB_SIZE_EXCEEDS_LIMIT;
      }
    }
  }
  const found = oversizedCommand(core, r.commands ?? [], r.messages ?? []);
  if (!found) return;
  const ex = startedWorkflowTask(core, decodeToken(r.taskToken));
  const message = `${enums.WorkflowTaskFailedCause[found.cause]}: ${found.message}`;
  answerAttachedQueries(core, ex, r.queryResults ?? {});
  appendTaskOutcome(core, ex, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, 'workflowTaskFailedEventAttributes', {
    cause: found.cause,
    failure: serverFailure(message, false),
    identity: r.identity,
  });
  // Closing the run ends the task too.
  terminate(core, ex, message, null, HISTORY_SERVICE_IDENTITY);
  dispatchPendingQueries(core, ex);
  await core.commit();
  throw invalid(message);
}

/** The first command (in order; update messages where their command refers to them) whose payload is too large. */
function oversizedCommand(core: EngineCore, commands: Command[], messages: Message[]): Oversized | null {
  const C = enums.WorkflowTaskFailedCause;
  const blob = (size: number, cause: number, message: string): Oversized | null =>
    blobTooLarge(core, size) ? { cause, message } : null;
  const memo = (m: Memo | null | undefined, cause: number, message: string): Oversized | null =>
    memoTooLarge(core, memoSize(m)) ? { cause, message } : null;
  const byId = new Map(messages.map((m) => [m.id ?? '', m]));
  const message = (m: Message | undefined): Oversized | null => {
    if (!m) return null;
    byId.delete(m.id ?? '');
    const type = (m.body?.type_url ?? '').replace(/^type\.googleapis\.com\//, '');
    return blob(
      anySize(m.body),
      C.WORKFLOW_TASK_FAILED_CAUSE_BAD_UPDATE_WORKFLOW_EXECUTION_MESSAGE,
      `Message type ${type} exceeds size limit.`,
    );
  };
  for (const c of commands) {
    let found: Oversized | null = null;
    switch (c.commandType) {
      case CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
        found = blob(
          payloadsSize(c.scheduleActivityTaskCommandAttributes?.input),
          C.WORKFLOW_TASK_FAILED_CAUSE_BAD_SCHEDULE_ACTIVITY_ATTRIBUTES,
          'ScheduleActivityTaskCommandAttributes.Input exceeds size limit.',
        );
        break;
      case CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION:
        // Temporal reports this one with the schedule-activity cause; kept as it is.
        found = blob(
          payloadsSize(c.completeWorkflowExecutionCommandAttributes?.result),
          C.WORKFLOW_TASK_FAILED_CAUSE_BAD_SCHEDULE_ACTIVITY_ATTRIBUTES,
          'CompleteWorkflowExecutionCommandAttributes.Result exceeds size limit.',
        );
        break;
      case CommandType.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION:
        found = blob(
          failureSize(c.failWorkflowExecutionCommandAttributes?.failure),
          C.WORKFLOW_TASK_FAILED_CAUSE_BAD_FAIL_WORKFLOW_EXECUTION_ATTRIBUTES,
          'FailWorkflowExecutionCommandAttributes.Failure exceeds size limit.',
        );
        break;
      case CommandType.COMMAND_TYPE_RECORD_MARKER:
        found = blob(
          payloadsMapSize(c.recordMarkerCommandAttributes?.details),
          C.WORKFLOW_TASK_FAILED_CAUSE_BAD_RECORD_MARKER_ATTRIBUTES,
          'RecordMarkerCommandAttributes.Details exceeds size limit.',
        );
        break;
      case CommandType.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION: {
        const a = c.continueAsNewWorkflowExecutionCommandAttributes;
        const cause = C.WORKFLOW_TASK_FAILED_CAUSE_BAD_CONTINUE_AS_NEW_ATTRIBUTES;
        found =
          blob(payloadsSize(a?.input), cause, 'ContinueAsNewWorkflowExecutionCommandAttributes. Input exceeds size limit.') ??
          memo(a?.memo, cause, 'ContinueAsNewWorkflowExecutionCommandAttributes. Memo exceeds size limit.');
        break;
      }
      case CommandType.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION: {
        const a = c.startChildWorkflowExecutionCommandAttributes;
        const cause = C.WORKFLOW_TASK_FAILED_CAUSE_BAD_START_CHILD_EXECUTION_ATTRIBUTES;
        found =
          blob(payloadsSize(a?.input), cause, 'StartChildWorkflowExecutionCommandAttributes. Input exceeds size limit.') ??
          memo(a?.memo, cause, 'StartChildWorkflowExecutionCommandAttributes.Memo exceeds size limit.');
        break;
      }
      case CommandType.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION:
        found = blob(
          payloadsSize(c.signalExternalWorkflowExecutionCommandAttributes?.input),
          C.WORKFLOW_TASK_FAILED_CAUSE_BAD_SIGNAL_WORKFLOW_EXECUTION_ATTRIBUTES,
          'SignalExternalWorkflowExecutionCommandAttributes.Input exceeds size limit.',
        );
        break;
      case CommandType.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
        found = blob(
          payloadDataMapSize(c.upsertWorkflowSearchAttributesCommandAttributes?.searchAttributes?.indexedFields),
          C.WORKFLOW_TASK_FAILED_CAUSE_BAD_SEARCH_ATTRIBUTES,
          'UpsertWorkflowSearchAttributesCommandAttributes exceeds size limit.',
        );
        break;
      case CommandType.COMMAND_TYPE_MODIFY_WORKFLOW_PROPERTIES:
        found = blob(
          payloadDataMapSize(c.modifyWorkflowPropertiesCommandAttributes?.upsertedMemo?.fields),
          C.WORKFLOW_TASK_FAILED_CAUSE_BAD_MODIFY_WORKFLOW_PROPERTIES_ATTRIBUTES,
          'ModifyWorkflowPropertiesCommandAttributes exceeds size limit.',
        );
        break;
      case CommandType.COMMAND_TYPE_PROTOCOL_MESSAGE:
        found = message(byId.get(c.protocolMessageCommandAttributes?.messageId ?? ''));
        break;
      default:
        break;
    }
    if (found) return found;
  }
  for (const m of [...byId.values()]) {
    const found = message(m);
    if (found) return found;
  }
  return null;
}

// ---------------------------------------------------------------- history limits

/**
 * After an open run's history grew (every change, core.ts `commit`): past `limit.historySize.error` bytes or
 * `limit.historyCount.error` events the run is terminated by the history service with Temporal's reason, as
 * Temporal's `enforceHistorySizeCheck` / `enforceHistoryCountCheck` do on every update of a run; past the warn
 * limits (`limit.historySize.warn`, `limit.historyCount.warn`) it is logged, once per run and limit (Temporal's
 * throttled logger says it again now and then). The request that made it grow hears `limitReason` (engine.ts).
 */
export function checkHistoryLimits(core: EngineCore, ex: Execution): void {
  const c = core.dynamicConfig;
  const size = historySizeBytes(ex);
  const count = ex.history.length;
  // The common case, on every commit: under every limit, nothing to log.
  if (
    size <= c.historySizeLimitWarn &&
    count <= c.historyCountLimitWarn &&
    size <= c.historySizeLimitError &&
    count <= c.historyCountLimitError
  )
    return;
  const run = { namespace: ex.s.namespace, workflowId: ex.s.workflowId, runId: ex.s.runId };
  let reason: string | undefined;
  if (size > c.historySizeLimitError) {
    log.warn('history size exceeds error limit.', { ...run, historySize: size, limit: c.historySizeLimitError });
    reason = FailureReason.historySize;
  } else if (count > c.historyCountLimitError) {
    log.warn('history count exceeds error limit.', { ...run, eventCount: count, limit: c.historyCountLimitError });
    reason = FailureReason.historyCount;
  }
  if (reason) {
    ex.limitReason = reason;
    terminate(core, ex, reason, null, HISTORY_SERVICE_IDENTITY);
    dispatchPendingQueries(core, ex);
    return;
  }
  ex.warned ??= {};
  if (size > c.historySizeLimitWarn && !ex.warned.size) {
    ex.warned.size = true;
    log.warn('history size exceeds warn limit.', { ...run, historySize: size, limit: c.historySizeLimitWarn });
  }
  if (count > c.historyCountLimitWarn && !ex.warned.count) {
    ex.warned.count = true;
    log.warn('history count exceeds warn limit.', { ...run, eventCount: count, limit: c.historyCountLimitWarn });
  }
}

/** RPCs that change a run they name: when the change passes a history limit, the caller hears it (engine.ts). */
export const RUN_CHANGING_RPCS: ReadonlySet<string> = new Set<RpcName>([
  'RespondWorkflowTaskCompleted',
  'RespondWorkflowTaskFailed',
  'RespondActivityTaskCompleted',
  'RespondActivityTaskCompletedById',
  'RespondActivityTaskFailed',
  'RespondActivityTaskFailedById',
  'RespondActivityTaskCanceled',
  'RespondActivityTaskCanceledById',
  'RecordActivityTaskHeartbeat',
  'RecordActivityTaskHeartbeatById',
  'SignalWorkflowExecution',
  'SignalWithStartWorkflowExecution',
  'UpdateWorkflowExecution',
  'RequestCancelWorkflowExecution',
]);

interface RunNamingRequest {
  namespace?: string | null;
  taskToken?: Uint8Array | null;
  workflowExecution?: { workflowId?: string | null; runId?: string | null } | null;
  workflowId?: string | null;
  runId?: string | null;
}

/** The open run a request names (its task token, execution, or workflow id), if any. */
export function openRunOfRequest(core: EngineCore, r: RunNamingRequest): Execution | undefined {
  try {
    if (r.taskToken && r.taskToken.byteLength > 0) {
      const t = decodeToken(r.taskToken, core.namespaces);
      const ex = core.runs.get(execKey(t.ns, t.r));
      return ex && core.isOpen(ex) ? ex : undefined;
    }
    const exec = r.workflowExecution ?? (r.workflowId ? { workflowId: r.workflowId, runId: r.runId } : undefined);
    return exec?.workflowId ? core.openRunOrUndefined(core.ns(r.namespace), exec) : undefined;
  } catch {
    // The handler gives the request's own error.
    return undefined;
  }
}
