// The engine's optional credential (`--auth-token-file`, `authToken`): every call must carry the metadata
// `authorization: Bearer <token>` — the header a Temporal API key travels in — or it is answered UNAUTHENTICATED
// before its request is read, so it changes and reveals nothing. Only the gRPC health check stays open: it
// answers SERVING and nothing else, and launchers and probes ask it without credentials.
import { createHash, timingSafeEqual } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';

/** The shortest token the engine accepts: anything shorter is a configuration mistake, not a secret. */
export const MIN_AUTH_TOKEN_LENGTH = 16;

/** Services answered without the token. */
const OPEN_SERVICES = ['/grpc.health.v1.Health/'];

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** A checker of `authorization` values, comparing in constant time (over digests, so lengths leak nothing either). */
export function bearerCheck(token: string): (values: readonly grpc.MetadataValue[]) => boolean {
  if (token.length < MIN_AUTH_TOKEN_LENGTH) {
    throw new Error(`the auth token must be at least ${MIN_AUTH_TOKEN_LENGTH} characters`);
  }
  const expected = digest(token);
  return (values) => {
    // exactly one header: a second one is ambiguous (which would a proxy forward?)
    if (values.length !== 1 || typeof values[0] !== 'string') return false;
    const match = /^Bearer\s+(.+)$/i.exec(values[0].trim());
    // the comparison runs on every call, matching or not, so its time says nothing about the token
    const presented = digest(match?.[1] ?? '');
    return timingSafeEqual(presented, expected) && match !== null;
  };
}

/** The server interceptor that refuses every call without the token (UNAUTHENTICATED, code 16). */
export function authInterceptor(token: string): grpc.ServerInterceptor {
  const check = bearerCheck(token);
  return (method, call) => {
    if (OPEN_SERVICES.some((prefix) => method.path.startsWith(prefix))) return new grpc.ServerInterceptingCall(call);
    return new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, pass) => {
            if (check(metadata.get('authorization'))) pass(metadata);
            // the metadata is not passed on: the handler never starts reading the request
            else call.sendStatus({ code: grpc.status.UNAUTHENTICATED, details: 'missing or invalid authorization token' });
          },
        }),
    });
  };
}
