// The worker's workflow bundle entry: every workflow paygate runs.
export { deliveryWorkflow } from './webhooks.js';
export { verificationWorkflow } from './verification.js';
export { escrowWorkflow } from './escrow.js';
export { reserveWorkflow } from './reserves.js';
export { scheduleWorkflow } from './schedules.js';
export { reconcileWorkflow } from './payments.js';
