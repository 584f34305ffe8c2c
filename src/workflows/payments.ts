import { proxyActivities } from '@temporalio/workflow';
import type { ReconcileActivities } from '../activities/payments.js';
import type { ReconcileInput, ReconcileResult, ReconcileWorkflow } from '../payments/reconcile-contract.js';

// One charge or cancel that left paygate's control (the PG was called, no final answer was recorded): ask the
// PG by the operation's derived key until it answers, settle the receipt, then tell the merchant. Started by
// the request whose call lost its answer, or by the worker's sweep when that process died.

// Asked until the PG answers: an outage only delays the answer. The interval stays short so a settlement
// follows within about 20 s of the PG being reachable again; a live owner of the call (ReconcileLater) is
// waited for the same way.
const settling = proxyActivities<ReconcileActivities>({
  startToCloseTimeout: '60 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '20 seconds' },
});

export async function reconcileWorkflow(input: ReconcileInput): Promise<ReconcileResult['outcome']> {
  const result =
    input.kind === 'charge'
      ? await settling.settleCharge({ receiptId: input.receiptId })
      : await settling.settleCancel({ receiptId: input.receiptId, cancelKey: input.cancelKey });
  if (result.notice) await settling.notifyReconciled(result.notice);
  return result.outcome;
}

// the signature the services start it by (payments/reconcile-contract.ts) is this function's
reconcileWorkflow satisfies ReconcileWorkflow;
