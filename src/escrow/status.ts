// Escrow statuses, their labels, and the transitions the PG's buyer events make. Pure code: the escrow workflow's
// bundle imports it. The status codes themselves are the gateway contract's (gateways/rules.ts), shown here as
// escrow's own vocabulary.
import { EscrowStatus } from '../gateways/rules.js';

export { EscrowStatus };

const STATUS_LOCALES: Readonly<Record<EscrowStatus, string>> = {
  0: '에스크로대기',
  3: '배송시작',
  1: '구매확정',
  [-2]: '구매거절요청',
  [-3]: '구매거절승인',
  [-1]: '정산보류',
};

export function escrowStatusLocale(status: number): string {
  return STATUS_LOCALES[status as EscrowStatus] ?? String(status);
}

/** The buyer's side of an order as the PG reports it (its notifications, its status answer). */
export const BUYER_EVENTS = ['purchase_confirmed', 'purchase_rejected', 'rejection_approved', 'settlement_held'] as const;
export type BuyerEvent = (typeof BUYER_EVENTS)[number];

export function isBuyerEvent(value: unknown): value is BuyerEvent {
  return typeof value === 'string' && (BUYER_EVENTS as readonly string[]).includes(value);
}

/** What each buyer event moves to, and from which states. Anything else is recorded and ignored. */
const TRANSITIONS: Readonly<Record<BuyerEvent, { readonly to: EscrowStatus; readonly from: readonly EscrowStatus[] }>> = {
  purchase_confirmed: { to: EscrowStatus.PurchaseConfirmed, from: [EscrowStatus.ShippingStarted] },
  purchase_rejected: { to: EscrowStatus.RejectionRequested, from: [EscrowStatus.ShippingStarted] },
  rejection_approved: { to: EscrowStatus.RejectionApproved, from: [EscrowStatus.RejectionRequested] },
  settlement_held: { to: EscrowStatus.SettlementHeld, from: [EscrowStatus.ShippingStarted, EscrowStatus.RejectionRequested] },
};

/** The status a buyer event leads to from `current`, or undefined when it does not fit (ignored). */
export function nextEscrowStatus(current: number, event: BuyerEvent): EscrowStatus | undefined {
  const rule = TRANSITIONS[event];
  return (rule.from as readonly number[]).includes(current) ? rule.to : undefined;
}

/** States in which the order waits for the buyer (and the reconcile timer runs). */
export function awaitsBuyer(status: number): boolean {
  return status === EscrowStatus.ShippingStarted || status === EscrowStatus.RejectionRequested;
}

/** States after which nothing more happens to the order. */
export function isFinalEscrowStatus(status: number): boolean {
  return (
    status === EscrowStatus.PurchaseConfirmed ||
    status === EscrowStatus.RejectionApproved ||
    status === EscrowStatus.SettlementHeld
  );
}

/** Where a transition came from, as the events history shows it. */
export type EscrowEventSource = 'api' | 'pg_notification' | 'reconcile';

/** The event a status stands for, when a PG or provider answer reveals a transition no notification brought. */
const EVENT_FOR_STATUS: Readonly<Partial<Record<number, BuyerEvent>>> = {
  [EscrowStatus.PurchaseConfirmed]: 'purchase_confirmed',
  [EscrowStatus.RejectionRequested]: 'purchase_rejected',
  [EscrowStatus.RejectionApproved]: 'rejection_approved',
  [EscrowStatus.SettlementHeld]: 'settlement_held',
};

/**
 * The buyer events, at most two, that bring an order from `current` to the status its PG (or provider) reports:
 * through the intermediate state when two notifications were lost (3 -> -2 -> -3). Empty when it is there already,
 * or when no event leads there.
 */
export function eventsTowards(current: number, target: number): { readonly event: BuyerEvent; readonly to: EscrowStatus }[] {
  const path: { event: BuyerEvent; to: EscrowStatus }[] = [];
  let status = current;
  for (let step = 0; step < 2 && status !== target; step++) {
    let event = EVENT_FOR_STATUS[target];
    let to = event === undefined ? undefined : nextEscrowStatus(status, event);
    if (to === undefined && target === EscrowStatus.RejectionApproved) {
      event = 'purchase_rejected';
      to = nextEscrowStatus(status, event);
    }
    if (event === undefined || to === undefined) break;
    path.push({ event, to });
    status = to;
  }
  return path;
}
