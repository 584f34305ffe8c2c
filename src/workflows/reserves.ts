import { ApplicationFailure, allHandlersFinished, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { ReserveActivities } from '../activities/reserves.js';
import {
  type ReserveErrorName,
  type ReserveExecution,
  type ReserveInput,
  reserveStateQuery,
  revokeReserveUpdate,
  type ReserveWorkflow,
} from '../reserves/contract.js';
import { UPDATE_NOT_AUTHORIZED, type UpdateProof } from '../platform/temporal/messages.js';

// One reserved charge: sleep until reserve_execute_at, then charge once through the charge service with the
// reserve's order_id; a revoke (update) before that ends it without charging. From the moment the timer
// fires the reserve is executing, and the revoke validator refuses it before anything reaches the history.

// The charge and the revoke must happen: retried without a cap (a PG or database outage delays them; the
// order_id claim and the PG's derived key make every retry re-drive the same charge, never a second one).
const durable = proxyActivities<ReserveActivities>({
  startToCloseTimeout: '60 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

const MIN_NONCE_LENGTH = 16;

type State = 'reserved' | 'revoking' | 'revoked' | 'executing' | 'done';

function failure(name: ReserveErrorName, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: name, message, nonRetryable: true });
}

export async function reserveWorkflow(input: ReserveInput): Promise<ReserveExecution> {
  let state: State = 'reserved';
  const spentNonces = new Set<string>();

  setHandler(reserveStateQuery, () => state);
  setHandler(
    revokeReserveUpdate,
    async (proof) => {
      spentNonces.add(proof.nonce);
      // synchronously, so a timer firing in the same activation finds the reserve no longer reserved
      state = 'revoking';
      const result = await durable.revokeReserve({ reserveId: input.reserveId });
      state = 'revoked';
      return result;
    },
    {
      validator: (proof: Partial<UpdateProof> | undefined) => {
        const nonce = proof?.nonce;
        if (typeof nonce !== 'string' || nonce.length < MIN_NONCE_LENGTH || spentNonces.has(nonce)) {
          throw ApplicationFailure.create({
            type: UPDATE_NOT_AUTHORIZED,
            message: 'the update carries no fresh proof from paygate',
            nonRetryable: true,
          });
        }
        if (state !== 'reserved') throw failure('RESERVE_NOT_REVOKABLE', `the reserve is ${state}`);
      },
    },
  );

  const waitMs = Date.parse(input.executeAt) - Date.now();
  if (waitMs > 0) await condition(() => state !== 'reserved', waitMs);
  if (state !== 'reserved') {
    await condition(allHandlersFinished);
    return { status: 'revoked' };
  }
  state = 'executing';
  const result = await durable.executeReserve({ reserveId: input.reserveId });
  state = 'done';
  return result;
}

// the signature the services start it by (src/reserves/contract.ts) is this function's
reserveWorkflow satisfies ReserveWorkflow;
