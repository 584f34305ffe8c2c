// Sandbox faults for merchants' own tests (sandbox mode): a project arms a fault on its next `count` calls
// of one sandbox PG operation, lists and disarms its faults. The faults live in the sandbox PG (its one
// fault board, src/sandbox/faults.ts) under the project's application_id, the merchant id paygate's
// adapters give the PG, so they touch no other project's calls. Bad input arms nothing. The body's fields are
// documented where they are checked (the OpenAPI document's body is derived from them).
import { z } from 'zod';
import { ApiError } from '../platform/errors.js';
import { formatTimestamp } from '../platform/time.js';
import { describeFields, documented, fails, failsWith, fields, isRecord, validate } from '../platform/validation.js';
import {
  armSandboxFault,
  type ArmedSandboxFault,
  disarmSandboxFaults,
  FAULT_KIND_WIRE,
  FAULT_OPERATION_WIRE,
  type FaultKind,
  type FaultOperation,
  listSandboxFaults,
} from './sandbox-fault-control.js';
import type { SandboxEndpoint } from './sandbox-inbox.js';
import { GatewayUnavailableError } from './types.js';
import type { Project } from '../projects/index.js';

/** Which operations each sandbox PG performs (what can fail there). */
export const SANDBOX_FAULT_OPERATIONS: Readonly<Record<string, readonly FaultOperation[]>> = {
  sandbox_card: ['issue_billing_key', 'charge', 'cancel', 'destroy_billing_key', 'payment'],
  // payment-window payments only, which the sandbox does not play for it
  sandbox_noauto: [],
  sandbox_identity: ['send_otp', 'resend_otp', 'confirm_otp'],
  sandbox_escrow_a: ['payment', 'cancel', 'shipping_start', 'escrow_status', 'escrow_notification'],
  sandbox_escrow_b: ['payment', 'cancel', 'shipping_start', 'escrow_status', 'escrow_notification'],
};
export const MAX_FAULT_COUNT = 100;
export const MAX_ARMED_FAULTS_PER_PROJECT = 100;

/** The documentation of a fault's operation and kind, in the request and in the answers. */
export const faultOperationDoc = z.enum(Object.keys(FAULT_OPERATION_WIRE) as [FaultOperation, ...FaultOperation[]]);
export const faultKindDoc = z
  .enum(Object.keys(FAULT_KIND_WIRE) as [FaultKind, ...FaultKind[]])
  .describe(
    'timeout: held past the timeout, then executed; error: HTTP 500, nothing executed; lost_response: executed, no answer; drop: escrow_notification only, never sent; decline: charge and issue_billing_key only, refused by the card issuer (pg_error_code CF01)',
  );

export interface SandboxFaultView {
  readonly fault_id: string;
  readonly pg: string;
  readonly operation: FaultOperation;
  readonly fault: FaultKind;
  readonly count: number;
  readonly remaining: number;
  readonly created_at: string;
}

export interface SandboxFaultService {
  /** Arms a fault parsed by parseFault (the route's step). */
  arm(project: Project, spec: FaultSpec): Promise<SandboxFaultView>;
  list(project: Project): Promise<SandboxFaultView[]>;
  disarm(project: Project): Promise<{ disarmed: number }>;
}

const view = (f: ArmedSandboxFault): SandboxFaultView => ({
  fault_id: f.faultId,
  pg: f.pg,
  operation: f.operation,
  fault: f.fault,
  count: f.count,
  remaining: f.remaining,
  created_at: formatTimestamp(f.createdAt),
});

const invalid = (payloadMessage: string) => fails('SANDBOX_FAULT_INVALID', { payloadMessage });

const required = (field: string) =>
  z.custom<string>((value) => typeof value === 'string' && value !== '', invalid(`${field} is required`));

const faultShape = {
  pg: documented(z.string(), required('pg')),
  operation: documented(faultOperationDoc, required('operation')),
  fault: documented(faultKindDoc, required('fault')),
  count: documented(
    z.number().int().min(1).max(MAX_FAULT_COUNT).optional().describe('the next count calls fail (default 1)'),
    z
      .custom<number | undefined>(
        (count) =>
          count === undefined || (typeof count === 'number' && Number.isInteger(count) && count >= 1 && count <= MAX_FAULT_COUNT),
        invalid(`count must be a whole number from 1 to ${MAX_FAULT_COUNT}`),
      )
      .transform((count) => count ?? 1),
  ),
};
const faultFields = fields(faultShape);

const faultBody = z
  .custom<unknown>(isRecord, invalid('the body must be a JSON object'))
  .superRefine(
    failsWith('SANDBOX_FAULT_INVALID', (body: unknown) => {
      const unknown = Object.keys(body as Record<string, unknown>).find((key) => !Object.hasOwn(faultShape, key));
      return unknown === undefined ? undefined : { payloadMessage: `unknown field ${unknown}` };
    }),
  )
  .pipe(faultFields);

/** The body of POST /sandbox/v1/faults as the OpenAPI document shows it: nothing else is accepted. */
export const sandboxFaultBody = describeFields([faultFields], { strict: true });

/** A fault to arm: which operation of which sandbox PG of the project, how it fails, on how many calls. */
export interface FaultSpec {
  readonly pg: string;
  readonly operation: FaultOperation;
  readonly fault: FaultKind;
  readonly count: number;
}

export function parseFault(project: Project, body: unknown): FaultSpec {
  const { pg, operation, fault, count } = validate(faultBody, body);
  const operations = Object.hasOwn(SANDBOX_FAULT_OPERATIONS, pg) ? SANDBOX_FAULT_OPERATIONS[pg] : undefined;
  if (operations === undefined || !project.pgs.includes(pg)) {
    throw new ApiError('SANDBOX_FAULT_PG_UNKNOWN', { message: `'${pg}' is not a sandbox PG of this project.` });
  }
  if (!(operations as readonly string[]).includes(operation)) {
    throw new ApiError('SANDBOX_FAULT_OPERATION_UNSUPPORTED', {
      message: `${pg} has no operation '${operation}'${operations.length > 0 ? `; it has ${operations.join(', ')}` : ''}.`,
    });
  }
  if (!Object.hasOwn(FAULT_KIND_WIRE, fault)) {
    throw new ApiError('SANDBOX_FAULT_KIND_UNSUPPORTED', {
      message: `Unknown fault '${fault}': timeout, error, lost_response, drop for escrow_notification, or decline for charge and issue_billing_key.`,
    });
  }
  // a notification is the PG calling paygate: it can only be lost
  if ((operation === 'escrow_notification') !== (fault === 'drop')) {
    throw new ApiError('SANDBOX_FAULT_KIND_UNSUPPORTED', {
      message: 'escrow_notification takes the fault drop, and drop applies to escrow_notification only.',
    });
  }
  // an issuer's refusal is an answer to a card operation
  if (fault === 'decline' && operation !== 'charge' && operation !== 'issue_billing_key') {
    throw new ApiError('SANDBOX_FAULT_KIND_UNSUPPORTED', {
      message: 'decline applies to charge and issue_billing_key only.',
    });
  }
  return { pg, operation: operation as FaultOperation, fault: fault as FaultKind, count };
}

export function createSandboxFaultService(deps: { readonly sandbox: SandboxEndpoint }): SandboxFaultService {
  const reaching = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof GatewayUnavailableError) {
        throw new ApiError('GATEWAY_UNAVAILABLE', { message: 'The sandbox PG could not be reached.', cause: err });
      }
      throw err;
    }
  };

  return {
    async arm(project, spec) {
      const merchantId = project.application_id;
      const armed = await reaching(() => listSandboxFaults(deps.sandbox, merchantId));
      if (armed.length >= MAX_ARMED_FAULTS_PER_PROJECT) throw new ApiError('SANDBOX_FAULTS_TOO_MANY');
      return view(await reaching(() => armSandboxFault(deps.sandbox, { merchantId, ...spec })));
    },
    async list(project) {
      return (await reaching(() => listSandboxFaults(deps.sandbox, project.application_id))).map(view);
    },
    async disarm(project) {
      return { disarmed: await reaching(() => disarmSandboxFaults(deps.sandbox, project.application_id)) };
    },
  };
}
