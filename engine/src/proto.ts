// Thin helpers over @temporalio/proto: decoding to plain objects with numeric int64s, and time conversions.
import protoRoot from '@temporalio/proto';
import type { google, temporal } from '@temporalio/proto';
import type Long from 'long';

/** Runtime values of the proto namespaces (the named ESM imports only work for types: the package is CommonJS). */
export const pb = protoRoot;
export type { google, temporal };

/** The slice of protobufjs reflection the gRPC wiring needs. */
export interface ReflectedMethod {
  name: string;
  requestType: string;
  responseType: string;
  resolvedRequestType: ProtoType<unknown> | null;
  resolvedResponseType: ProtoType<unknown> | null;
}
export interface ReflectedService {
  methodsArray: ReflectedMethod[];
  resolveAll(): ReflectedService;
}
export const root = protoRoot as unknown as { lookupService(name: string): ReflectedService };

export const enums = pb.temporal.api.enums.v1;
export const EventType = enums.EventType;
export const CommandType = enums.CommandType;
export const Status = enums.WorkflowExecutionStatus;
export const TimeoutType = enums.TimeoutType;
export const RetryState = enums.RetryState;

/** A message as the engine handles it: int64 fields as numbers (decoded with `longs: Number`). */
export type Plain<T> = T extends Long
  ? number
  : T extends Uint8Array
    ? Uint8Array
    : T extends Array<infer U>
      ? Array<Plain<U>>
      : T extends object
        ? { [K in keyof T]: Plain<T[K]> }
        : T;

type WSNS = typeof temporal.api.workflowservice.v1;
/** Request/response shapes of WorkflowService by message name, e.g. Req<'StartWorkflowExecutionRequest'>. */
export type Req<K extends keyof WSNS> = WSNS[K] extends { create(p?: infer P): unknown } ? Plain<NonNullable<P>> : never;

export type HistoryEvent = Plain<temporal.api.history.v1.IHistoryEvent>;
export type Payloads = Plain<temporal.api.common.v1.IPayloads>;
export type Payload = Plain<temporal.api.common.v1.IPayload>;
export type Failure = Plain<temporal.api.failure.v1.IFailure>;
export type Memo = Plain<temporal.api.common.v1.IMemo>;
export type SearchAttributes = Plain<temporal.api.common.v1.ISearchAttributes>;
export type Header = Plain<temporal.api.common.v1.IHeader>;
export type RetryPolicy = Plain<temporal.api.common.v1.IRetryPolicy>;
export type Command = Plain<temporal.api.command.v1.ICommand>;
export type Timestamp = Plain<google.protobuf.ITimestamp>;
export type Duration = Plain<google.protobuf.IDuration>;
export type Message = Plain<temporal.api.protocol.v1.IMessage>;

/** int64 fields arrive as Long (or number once normalised); this folds both to a JS number. */
export function num(v: Long | number | string | null | undefined): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'number') return v;
  if (typeof v === 'string') return Number(v);
  return v.toNumber();
}

export function durationMs(d: Duration | null | undefined): number {
  if (!d) return 0;
  return num(d.seconds) * 1000 + Math.floor((d.nanos ?? 0) / 1e6);
}

export function msDuration(ms: number): Duration {
  const whole = Math.floor(ms / 1000);
  return { seconds: whole, nanos: Math.round((ms - whole * 1000) * 1e6) };
}

export function tsMs(t: Timestamp | null | undefined): number {
  if (!t) return 0;
  return num(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
}

export function msTs(ms: number): Timestamp {
  const whole = Math.floor(ms / 1000);
  return { seconds: whole, nanos: Math.round((ms - whole * 1000) * 1e6) };
}

export interface ProtoType<T> {
  decode(buf: Uint8Array): unknown;
  encode(msg: T): { finish(): Uint8Array };
  toObject(msg: unknown, opts: { longs: NumberConstructor }): Record<string, unknown>;
}

/** Decodes to a plain object whose int64 fields are numbers; bytes stay Buffers. */
export function decodePlain<T>(type: ProtoType<T>, buf: Uint8Array): Plain<T> {
  return type.toObject(type.decode(buf), { longs: Number }) as Plain<T>;
}

/** Packs a message as google.protobuf.Any, whose reflected field is snake_case `type_url` (camelCase is silently dropped). */
export function packAny<T>(typeName: string, type: ProtoType<T>, msg: Plain<T>): { type_url: string; value: Uint8Array } {
  return { type_url: `type.googleapis.com/${typeName}`, value: type.encode(msg as T).finish() };
}
