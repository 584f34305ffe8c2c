// gRPC status codes the engine answers with, and the error type that carries them to the wiring layer.
export const Code = {
  CANCELLED: 1,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
} as const;

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export const notFound = (what: string) => new RpcError(Code.NOT_FOUND, what);
export const invalid = (what: string) => new RpcError(Code.INVALID_ARGUMENT, what);
