// The sandbox escrow PGs' behaviour, independent of HTTP: escrow orders opened by a payment, shipping start
// (two wire formats: sandbox_escrow_a gets every field, sandbox_escrow_b only TID, invoice and courier),
// the buyer's events (which move the PG's own state when they fit, and are always notified), the status
// inquiry that answers truthfully, and what each PG received, per tid, for GET /_sandbox/pg-requests.
import { createHmac, randomBytes } from 'node:crypto';
import { EscrowStatus, nextEscrowStatus, type BuyerEvent } from '../escrow/rules.js';
import { BoundedMap } from './bounded-map.js';
import { approved, refused, type PgOutcome } from './outcome.js';
import type { JournalRecord, JournalSink } from './state-journal.js';

/** A tracking number both escrow PGs refuse. */
export const FAILING_TRACKING_NUMBER = 'FAIL-PG';
const MAX_REQUESTS_PER_ORDER = 200;

export interface ReceivedRequest {
  readonly pg: string;
  readonly operation: string;
  readonly body: unknown;
  readonly receivedAt: Date;
}

interface Order {
  readonly tid: string;
  readonly pg: 'sandbox_escrow_a' | 'sandbox_escrow_b';
  status: EscrowStatus;
  readonly notifyUrl: string | undefined;
  readonly merchantRef: string;
  /** the merchant that paid it, when the payment said */
  readonly merchant?: string | undefined;
}

export interface PendingNotification {
  readonly url: string;
  readonly body: string;
  readonly notificationId: string;
}

const STATE_A: Readonly<Record<EscrowStatus, string>> = {
  0: 'WAIT',
  3: 'DLV',
  1: 'CFRM',
  [-2]: 'RJCT',
  [-3]: 'RFND',
  [-1]: 'HOLD',
};
const STATE_B: Readonly<Record<EscrowStatus, string>> = {
  0: 'ready',
  3: 'shipping',
  1: 'confirmed',
  [-2]: 'rejected',
  [-3]: 'refunded',
  [-1]: 'held',
};

export const ESCROW_PGS = ['sandbox_escrow_a', 'sandbox_escrow_b'] as const;
export const isEscrowPg = (pg: string): pg is Order['pg'] => (ESCROW_PGS as readonly string[]).includes(pg);

export class SandboxEscrowPg {
  private readonly orders = new BoundedMap<string, Order>(100_000);
  private readonly received = new BoundedMap<string, ReceivedRequest[]>(100_000);

  constructor(
    /** the token shared with paygate: notifications are signed with a subkey of it */
    private readonly notificationKey: Buffer,
    private readonly clock: () => Date,
    /** where orders and received requests are kept across restarts */
    private readonly journal: JournalSink = { write: () => undefined },
  ) {}

  /** Keeps what a PG received for a tid (newest last here; the route lists newest first). */
  receive(tid: string, pg: string, operation: string, body: unknown): void {
    const receivedAt = this.clock();
    this.keepReceived(tid, { pg, operation, body, receivedAt });
    this.journal.write({ k: 'escrow.received', tid, pg, operation, body, receivedAt: receivedAt.toISOString() });
  }

  private keepReceived(tid: string, request: ReceivedRequest): void {
    const list = this.received.get(tid) ?? [];
    list.push(request);
    if (list.length > MAX_REQUESTS_PER_ORDER) list.shift();
    this.received.set(tid, list);
  }

  requestsFor(tid: string): readonly ReceivedRequest[] {
    return [...(this.received.get(tid) ?? [])].reverse();
  }

  open(tid: string, pg: string, notifyUrl: string | undefined, merchantRef: string, merchant?: string): void {
    if (!isEscrowPg(pg)) return;
    this.keep({ tid, pg, status: EscrowStatus.Waiting, notifyUrl, merchantRef, merchant });
  }

  /** The order of `tid`, for the merchant and PG its calls belong to. */
  order(tid: string): Readonly<Order> | undefined {
    return this.orders.get(tid);
  }

  private keep(order: Order): void {
    this.orders.set(order.tid, order);
    this.journal.write({ k: 'escrow.order', ...order });
  }

  /** Replays one journaled fact (see state-journal.ts); other kinds are not these PGs'. */
  restore(record: JournalRecord): void {
    if (record.k === 'escrow.order') {
      const { k: _k, ...order } = record as JournalRecord & Order;
      this.orders.set(order.tid, order);
    } else if (record.k === 'escrow.received') {
      const {
        k: _k,
        tid,
        receivedAt,
        ...request
      } = record as JournalRecord & Omit<ReceivedRequest, 'receivedAt'> & { tid: string; receivedAt: string };
      this.keepReceived(tid, { ...request, receivedAt: new Date(receivedAt) });
    }
  }

  *snapshot(): Iterable<JournalRecord> {
    for (const order of this.orders.values()) yield { k: 'escrow.order', ...order };
    for (const [tid, list] of this.received.pairs()) {
      for (const r of list) yield { k: 'escrow.received', tid, ...r, receivedAt: r.receivedAt.toISOString() };
    }
  }

  shipA(b: { tid: string; invoice_no: string }): PgOutcome<{ confirm_url: string }> {
    const order = this.orders.get(b.tid);
    if (order?.pg !== 'sandbox_escrow_a') return refused('EA01', 'unknown escrow transaction');
    if (order.status !== EscrowStatus.Waiting) return refused('EA02', 'shipping already registered');
    if (b.invoice_no === FAILING_TRACKING_NUMBER) return refused('EA31', 'invalid invoice number');
    order.status = EscrowStatus.ShippingStarted;
    this.keep(order);
    return approved({ confirm_url: `https://escrow-a.sandbox.invalid/confirm/${order.tid}` });
  }

  shipB(b: { TID: string; INVOICE_NO: string }): PgOutcome<Record<string, never>> {
    const order = this.orders.get(b.TID);
    if (order?.pg !== 'sandbox_escrow_b') return refused('B404', 'no such transaction');
    if (order.status !== EscrowStatus.Waiting) return refused('B409', 'invoice already registered');
    if (b.INVOICE_NO === FAILING_TRACKING_NUMBER) return refused('B422', 'invoice number rejected by courier');
    order.status = EscrowStatus.ShippingStarted;
    this.keep(order);
    return approved({});
  }

  statusA(b: { tid: string }): PgOutcome<{ escrow_state: string }> {
    const order = this.orders.get(b.tid);
    if (order?.pg !== 'sandbox_escrow_a') return refused('EA01', 'unknown escrow transaction');
    return approved({ escrow_state: STATE_A[order.status] });
  }

  statusB(b: { TID: string }): PgOutcome<{ STATE: string }> {
    const order = this.orders.get(b.TID);
    if (order?.pg !== 'sandbox_escrow_b') return refused('B404', 'no such transaction');
    return approved({ STATE: STATE_B[order.status] });
  }

  /**
   * The buyer acts: the PG's state moves when the event fits it, and the notification is made whether it
   * fits or not (undefined when the order has no notify URL). Unknown tid: undefined with known = false.
   */
  buyerEvent(tid: string, event: BuyerEvent): { known: boolean; notification?: PendingNotification } {
    const order = this.orders.get(tid);
    if (!order) return { known: false };
    const next = nextEscrowStatus(order.status, event);
    if (next !== undefined) {
      order.status = next;
      this.keep(order);
    }
    if (order.notifyUrl === undefined) return { known: true };
    const notificationId = `ntf_${randomBytes(12).toString('hex')}`;
    const body = JSON.stringify({
      notification_id: notificationId,
      tid,
      merchant_ref: order.merchantRef,
      event,
      occurred_at: this.clock().toISOString(),
    });
    return { known: true, notification: { url: order.notifyUrl, body, notificationId } };
  }

  /** The signature header of a notification body sent at `now`. */
  sign(body: string, now: number): string {
    return `t=${now},v1=${createHmac('sha256', this.notificationKey).update(`${now}.${body}`).digest('hex')}`;
  }
}
