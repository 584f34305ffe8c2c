// Wires handler objects to @grpc/grpc-js using the reflected service descriptors of @temporalio/proto.
// Methods without a handler are not registered, so grpc-js answers them UNIMPLEMENTED; the engine passes a last
// handler object that answers the methods of features it lacks with a message naming the feature (engine.ts).
import * as grpc from '@grpc/grpc-js';
import { RpcError } from './errors.js';
import { log } from './log.js';
import { root, type ProtoType } from './proto.js';

export type OnCancel = (cancel: () => void) => void;
export type Handler = (req: never, onCancel: OnCancel) => Promise<object>;
export type Handlers = Record<string, Handler | undefined>;

function bind(handlers: object): Handlers {
  const out: Handlers = {};
  let proto: object | null = handlers;
  while (proto && proto !== Object.prototype) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const fn = (handlers as Record<string, unknown>)[name];
      if (name !== 'constructor' && /^[A-Z]/.test(name) && typeof fn === 'function') {
        out[name] = (fn as Handler).bind(handlers);
      }
    }
    proto = Object.getPrototypeOf(proto) as object | null;
  }
  return out;
}

/** protobufjs already returns a Buffer under Node; wrap (never copy) whatever it returns. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Serves `serviceName` with the methods of the handler objects (an RPC is served by the first that has it). */
export function addService(server: grpc.Server, serviceName: string, ...handlerObjects: object[]): void {
  const service = root.lookupService(serviceName).resolveAll();
  const handlers: Handlers = {};
  for (const o of [...handlerObjects].reverse()) Object.assign(handlers, bind(o));
  const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  const implementation: grpc.UntypedServiceImplementation = {};
  for (const m of service.methodsArray) {
    const handler = handlers[m.name];
    const reqType = m.resolvedRequestType as ProtoType<unknown> | null;
    const resType = m.resolvedResponseType as ProtoType<unknown> | null;
    if (!handler || !reqType || !resType) continue;
    definition[m.name] = {
      path: `/${serviceName}/${m.name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (v: unknown) => asBuffer(reqType.encode(v).finish()),
      requestDeserialize: (b: Buffer) => reqType.toObject(reqType.decode(b), { longs: Number }),
      responseSerialize: (v: unknown) => asBuffer(resType.encode(v).finish()),
      responseDeserialize: (b: Buffer) => resType.toObject(resType.decode(b), { longs: Number }),
    };
    implementation[m.name] = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const cancels: Array<() => void> = [];
      let cancelled = false;
      call.on('cancelled', () => {
        cancelled = true;
        for (const c of cancels) c();
      });
      const onCancel: OnCancel = (c) => {
        if (cancelled) c();
        else cancels.push(c);
      };
      if (log.debugEnabled) log.debug(`-> ${m.name}`);
      handler(call.request as never, onCancel).then(
        (res) => {
          if (log.debugEnabled) log.debug(`<- ${m.name}`, { keys: Object.keys(res) });
          callback(null, res);
        },
        (err: unknown) => {
          if (err instanceof RpcError) {
            const detailsBin = err.statusDetailsBin();
            if (detailsBin) {
              const metadata = new grpc.Metadata();
              metadata.set('grpc-status-details-bin', detailsBin);
              callback({ code: err.code, details: err.message, metadata });
            } else {
              callback({ code: err.code, details: err.message });
            }
          } else {
            log.error(`${m.name} failed`, { error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
            callback({ code: grpc.status.INTERNAL, details: err instanceof Error ? err.message : String(err) });
          }
        },
      );
    };
  }
  server.addService(definition, implementation);
}
