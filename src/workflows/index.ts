// The worker's workflow bundle entry: every workflow paygate runs.
export { verificationWorkflow } from './verification.js';
