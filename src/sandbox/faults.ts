// The sandbox PGs' armed faults: the one mechanism behind the internal POST /_sandbox/faults (paygate's own
// tests) and the merchants' POST /sandbox/v1/faults (paygate arms them here for the calling project).
// A fault armed with a merchant applies only to that merchant's calls (what the PG knows of a call's
// merchant: the merchant_id a billing key issuance, a payment or an OTP request names, inherited by the
// billing key, the charge, the escrow order and the verification they create), with a pg only to that PG's;
// without them, to every call. Faults are taken in the order they were armed and survive a restart.
import { randomBytes } from 'node:crypto';
import type { JournalRecord, JournalSink } from './state-journal.js';

export const SANDBOX_OPERATIONS = [
  'billing_key.issue',
  'charge',
  'cancel',
  'billing_key.revoke',
  'otp.request',
  'otp.resend',
  'otp.confirm',
  'payment',
  'escrow.ship',
  'escrow.status',
  'escrow.notify',
] as const;
export type SandboxOperation = (typeof SANDBOX_OPERATIONS)[number];

/**
 *   500           HTTP 500 before doing anything
 *   timeout       does the operation, then holds the answer (the caller times out; a retry replays)
 *   garbage       does the operation, then answers a body that is not JSON
 *   drop          escrow.notify only: the notification is never sent
 *   late          holds the request past the caller's timeout, then does the operation (the answer goes nowhere)
 *   lost_response does the operation, then closes the connection without an answer
 *   decline       refuses the operation as the card issuer would (CF01), and keeps that refusal as its answer under
 *                 the call's Idempotency-Key: what a card that declines once looks like (a schedule's dunning)
 */
export const SANDBOX_FAULTS = ['500', 'timeout', 'garbage', 'drop', 'late', 'lost_response', 'decline'] as const;
export type SandboxFault = (typeof SANDBOX_FAULTS)[number];

export interface ArmedFault {
  readonly id: string;
  readonly operation: SandboxOperation;
  readonly fault: SandboxFault;
  readonly count: number;
  remaining: number;
  readonly merchant?: string | undefined;
  readonly pg?: string | undefined;
  readonly createdAt: string;
}

/** What the PG knows of a call: whose it is and which PG it is for. */
export interface CallContext {
  readonly merchant?: string | undefined;
  readonly pg?: string | undefined;
}

/** Bounds the armed faults of the whole sandbox; paygate bounds each project's well below. */
export const MAX_ARMED_FAULTS = 10_000;

export class FaultBoard {
  private armed: ArmedFault[] = [];

  constructor(
    private readonly clock: () => Date,
    private readonly journal: JournalSink = { write: () => undefined },
  ) {}

  /** undefined when the sandbox already holds MAX_ARMED_FAULTS */
  arm(spec: {
    operation: SandboxOperation;
    fault: SandboxFault;
    count: number;
    merchant?: string | undefined;
    pg?: string | undefined;
  }): ArmedFault | undefined {
    if (this.armed.length >= MAX_ARMED_FAULTS) return undefined;
    const fault: ArmedFault = {
      id: `flt_${randomBytes(12).toString('hex')}`,
      ...spec,
      remaining: spec.count,
      createdAt: this.clock().toISOString(),
    };
    this.armed.push(fault);
    this.journal.write({ k: 'fault.armed', ...fault });
    return fault;
  }

  /** Armed faults, oldest first: a merchant's, or all of them. */
  list(merchant?: string): readonly ArmedFault[] {
    return this.armed.filter((f) => merchant === undefined || f.merchant === merchant);
  }

  /** Disarms a merchant's faults, or all of them; answers how many. */
  disarm(merchant?: string): number {
    const before = this.armed.length;
    this.armed = this.armed.filter((f) => merchant !== undefined && f.merchant !== merchant);
    this.journal.write({ k: 'fault.disarmed', ...(merchant === undefined ? {} : { merchant }) });
    return before - this.armed.length;
  }

  /** Takes one use of the oldest fault armed for this call, if any. */
  take(operation: SandboxOperation, call: CallContext): SandboxFault | undefined {
    const fault = this.armed.find(
      (f) =>
        f.operation === operation &&
        (f.merchant === undefined || f.merchant === call.merchant) &&
        (f.pg === undefined || f.pg === call.pg),
    );
    if (fault === undefined) return undefined;
    fault.remaining--;
    if (fault.remaining <= 0) this.armed = this.armed.filter((f) => f !== fault);
    this.journal.write({ k: 'fault.taken', id: fault.id });
    return fault.fault;
  }

  /** Replays one journaled fact (see state-journal.ts). */
  restore(record: JournalRecord): void {
    if (record.k === 'fault.armed') {
      const { k: _k, ...fault } = record as JournalRecord & ArmedFault;
      this.armed.push({ ...fault });
    } else if (record.k === 'fault.taken') {
      const fault = this.armed.find((f) => f.id === record.id);
      if (fault === undefined) return;
      fault.remaining--;
      if (fault.remaining <= 0) this.armed = this.armed.filter((f) => f !== fault);
    } else if (record.k === 'fault.disarmed') {
      const merchant = typeof record.merchant === 'string' ? record.merchant : undefined;
      this.armed = this.armed.filter((f) => merchant !== undefined && f.merchant !== merchant);
    }
  }

  *snapshot(): Iterable<JournalRecord> {
    for (const fault of this.armed) yield { k: 'fault.armed', ...fault };
  }
}
