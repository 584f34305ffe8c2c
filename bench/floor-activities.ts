// The Temporal floor's activities (bench/floor.ts): the five paygate's verification and shipping flows run, under
// their names, each answering at once with a canned value of the size paygate's answers with (no gateway, no
// database). Their inputs are the shapes paygate's workflows hand them (src/activities/verification.ts,
// src/activities/escrow.ts), which the floor workflows build with the same lengths. Type-only for the bundle.

/** What every local activity of paygate carries so its sandbox clock can follow the engine (WorkflowTimeStamp). */
interface Stamped {
  readonly workflowTimeMs: number;
}

export interface FloorPerson {
  readonly name: string;
  readonly phone: string;
  readonly identityNo: string;
  readonly carrier: string;
}

export interface FloorShipment {
  readonly trackingNumber: string;
  readonly deliveryCorp: string;
  readonly recipient: { readonly name: string; readonly phone: string; readonly address: string; readonly zipcode: string };
  readonly sender: {
    readonly name: string;
    readonly phone: string;
    readonly zipcode: string;
    readonly addr1: string;
    readonly addr2: string;
  };
}

export interface SendOtpInput extends Stamped {
  readonly receiptId: string;
  readonly merchantId: string;
  readonly pg: string;
  readonly type: 'sms' | 'pass';
  readonly person: FloorPerson;
  readonly clientIp: string;
  readonly siteUrl?: string;
}

export interface ResendOtpInput extends Stamped {
  readonly pg: string;
  readonly tid: string;
  readonly idempotencyKey: string;
  readonly receiptId: string;
  readonly numberOfRealarms: number;
}

export interface ConfirmOtpInput extends Stamped {
  readonly receiptId: string;
  readonly pg: string;
  readonly tid: string;
  readonly otp: string;
}

export interface ShippingInput extends Stamped {
  readonly receiptId: string;
  readonly attempt: number;
  readonly pg: string;
  readonly gatewayTid: string;
  readonly shipment: FloorShipment;
}

export interface RecordEventInput extends Stamped {
  readonly transition: {
    readonly receiptId: string;
    readonly seq: number;
    readonly event: string;
    readonly source: string;
    readonly fromStatus: number;
    readonly toStatus?: number;
    readonly occurredAt: string;
  };
  readonly tracking?: { readonly trackingNumber: string; readonly deliveryCorp: string };
}

/** The sandbox identity PG's tid: `sid_` and 24 hex characters. */
const CANNED_TID = `sid_${'0'.repeat(24)}`;

export const floorActivities = {
  /** paygate: the identity PG's OTP request and the tid's write; the write done (`recorded`). */
  async sendVerificationOtp(_input: SendOtpInput): Promise<{ tid: string; recorded: boolean }> {
    return { tid: CANNED_TID, recorded: true };
  },

  /** paygate: the resend count's write, then the PG's resend. */
  async resendVerificationOtp(_input: ResendOtpInput): Promise<{ recorded: boolean }> {
    return { recorded: true };
  },

  /** paygate: the PG's confirm and the person's write; the write done, so no person in the result. */
  async confirmVerificationOtp(_input: ConfirmOtpInput): Promise<{ authenticatedAt: string; recorded: true }> {
    return { authenticatedAt: new Date().toISOString(), recorded: true };
  },

  /** paygate: sandbox_escrow_b's invoice registration, which answers no confirm URL. */
  async startEscrowShipping(_input: ShippingInput): Promise<{ confirmUrl?: string }> {
    return {};
  },

  /**
   * paygate: the order's event saved, and its ESCROW_STATUS_CHANGED delivery when the project has a webhook_url —
   * bench:flows's project has none (it sets the message webhook only), so no delivery id.
   */
  async recordEscrowEvent(_input: RecordEventInput): Promise<{ deliveryId?: string }> {
    return {};
  },
};

export type FloorActivities = typeof floorActivities;
