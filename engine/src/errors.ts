// gRPC status codes the engine answers with, and the error type that carries them to the wiring layer. Where
// Temporal attaches a typed detail to a status (google.rpc.Status details, e.g. NamespaceNotFoundFailure), the
// error carries it too, so the SDKs raise the same error classes they raise against Temporal.
import { packAny, pb } from './proto.js';

export const Code = {
  CANCELLED: 1,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
} as const;

/** One google.protobuf.Any of a status' details. */
export interface StatusDetail {
  type_url: string;
  value: Uint8Array;
}

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly details: StatusDetail[] = [],
  ) {
    super(message);
  }

  /** The serialised google.rpc.Status for the `grpc-status-details-bin` trailer, when there are details. */
  statusDetailsBin(): Buffer | undefined {
    if (this.details.length === 0) return undefined;
    const status = pb.google.rpc.Status.encode({ code: this.code, message: this.message, details: this.details }).finish();
    return Buffer.from(status.buffer, status.byteOffset, status.byteLength);
  }
}

export const notFound = (what: string) => new RpcError(Code.NOT_FOUND, what);
export const invalid = (what: string) => new RpcError(Code.INVALID_ARGUMENT, what);

/** Temporal's NamespaceNotFound: its wording, and the detail the SDKs turn into NamespaceNotFoundError. */
export function namespaceNotFound(namespace: string): RpcError {
  const detail = packAny(
    'temporal.api.errordetails.v1.NamespaceNotFoundFailure',
    pb.temporal.api.errordetails.v1.NamespaceNotFoundFailure,
    {
      namespace,
    },
  );
  return new RpcError(Code.NOT_FOUND, `Namespace ${namespace} is not found.`, [detail]);
}

/** An RPC of a feature this server does not have. */
export function unimplemented(message: string): RpcError {
  return new RpcError(Code.UNIMPLEMENTED, message);
}
