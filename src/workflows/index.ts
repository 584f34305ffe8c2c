// The worker's workflow bundle entry: every workflow paygate runs.
export { deliveryWorkflow } from './delivery.js';
export { verificationWorkflow } from './verification.js';
export { escrowWorkflow } from './escrow.js';
export { reserveWorkflow } from './reserve.js';
export { scheduleWorkflow } from './schedule.js';
export { reconcileWorkflow } from './reconcile.js';
