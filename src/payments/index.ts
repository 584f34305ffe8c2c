// The payments area's public module: what other areas and the layers above (routes, activities, the composition
// root, the CLI) may use of it. Its pure rules (billing-rules.ts, receipt-rules.ts, card.ts) and its workflow
// contract (reconcile-contract.ts) are imported where they stand: they are workflow-safe, and this module pulls
// in the stores and services (Kysely, Temporal's client). The area's own files import each other directly.
export { createBillingKeyService, type BillingKeyService } from './billing-keys.js';
export { createBillingKeyStore, type BillingKeyStore, merchantBillingKey } from './billing-keys-store.js';
export { createCancelService, type CancelService } from './cancels.js';
export { chargingCardGateway } from './card-gateways.js';
export { adoptableReceipt, chargeProject, chargeRefusal } from './charge-recovery.js';
export { createChargeService, type ChargeService } from './charges.js';
export { chargeExample, paymentsHttp, Receipt, receiptExample } from './http.js';
export {
  createReceiptService,
  createReconcileStarter,
  type EscrowDataLookup,
  type ListedReceipt,
  type ReceiptService,
  ReconcileLater,
  type ReconcileStarter,
  receiptResponse,
  sweepUnsettled,
} from './receipts.js';
export { createReceiptStore, merchantReceiptId, type ReceiptRow, type ReceiptStore } from './receipts-store.js';
export {
  createProviderNotificationService,
  type ProviderEscrowStatusPort,
  type ProviderNotificationService,
} from './provider-notifications.js';
export { findUsableBillingKey } from './usable-billing-key.js';
