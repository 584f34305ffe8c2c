// Every answer held against its route's contract: the success status with the contract's answer schema (no field
// the schema does not name, none it requires missing), an error with the catalog envelope and one of the errors the
// route documents. The suite installs it on every app it builds (test/helpers/app.ts), so the reference and the
// typed client, both made from the contracts, cannot drift from what the handlers send.
import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { ApiErrorBody, type RouteContract } from '../platform/http-contract.js';
import { documentedErrors, routeDocs } from './docs/openapi.js';

export interface AnswerMismatch {
  /** 'METHOD /path' as the contracts name it */
  readonly route: string;
  readonly status: number;
  readonly problem: string;
  /** the answer's body, as sent (cut at 2 KB) */
  readonly body: string;
}

export interface CheckedAnswer {
  readonly route: string;
  readonly status: number;
}

export interface AnswerCheck {
  /** every answer to a route with a contract, checked or not */
  readonly answered: (answer: CheckedAnswer) => void;
  readonly mismatch: (mismatch: AnswerMismatch) => void;
}

/** The paths of `sent` that `parsed` (the schema's output, unknown keys stripped) does not carry. */
function undocumentedPaths(sent: unknown, parsed: unknown, at = ''): string[] {
  if (Array.isArray(sent) && Array.isArray(parsed)) {
    return sent.flatMap((item, i) => undocumentedPaths(item, parsed[i], `${at}[${i}]`));
  }
  if (sent && typeof sent === 'object' && parsed && typeof parsed === 'object' && !Array.isArray(sent)) {
    return Object.entries(sent).flatMap(([key, value]) =>
      key in parsed
        ? undocumentedPaths(value, (parsed as Record<string, unknown>)[key], at ? `${at}.${key}` : key)
        : [at ? `${at}.${key}` : key],
    );
  }
  return [];
}

function schemaProblem(schema: z.ZodType, body: unknown): string | undefined {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    return parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
  }
  const extra = undocumentedPaths(body, parsed.data);
  return extra.length > 0 ? `fields the answer schema does not document: ${extra.join(', ')}` : undefined;
}

function problemOf(contract: RouteContract, auth: string | undefined, status: number, payload: string, type: string) {
  const json = type.startsWith('application/json');
  const body: unknown = json ? JSON.parse(payload) : payload;
  if (status === contract.response.status) {
    const expectedType = contract.response.contentType ?? 'application/json';
    if (!type.startsWith(expectedType.split(';')[0]!)) return `content-type ${type}, documented ${expectedType}`;
    return schemaProblem(contract.response.schema, body);
  }
  if (status >= 400 && json) {
    const envelope = schemaProblem(contract.errorAnswer?.status === status ? contract.errorAnswer.schema : ApiErrorBody, body);
    if (envelope) return envelope;
    const name = (body as { error_code: string }).error_code;
    return documentedErrors(contract, auth).includes(name as never) ? undefined : `error ${name} is not documented`;
  }
  return `status ${status} is not documented (the route answers ${contract.response.status})`;
}

/** Installs the check on every route registered after it (register it before the routes). */
export function installAnswerCheck(app: FastifyInstance, check: AnswerCheck): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const url = request.routeOptions.url;
    if (url === undefined || request.method === 'HEAD') return payload;
    const route = `${request.method} ${url}`;
    const contract = routeDocs[route];
    if (!contract) return payload;
    const status = reply.statusCode;
    check.answered({ route, status });
    if (typeof payload !== 'string') return payload;
    const type = String(reply.getHeader('content-type') ?? '');
    let problem: string | undefined;
    try {
      problem = problemOf(contract, request.routeOptions.config.auth, status, payload, type);
    } catch (err) {
      problem = `the answer could not be read: ${(err as Error).message}`;
    }
    if (problem) check.mismatch({ route, status, problem, body: payload.slice(0, 2048) });
    return payload;
  });
}
