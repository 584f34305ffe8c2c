// What a workflow may trust in a message it is sent, in two layers. The codec (codec.ts) seals every payload
// for one workflow: the namespace and workflow id are the seal's associated data, so a payload lifted from any
// history opens only in the workflow it was made for. Inside the seal, every signal and update paygate sends
// carries one argument, an envelope naming the message, so a sealed argument of one message cannot be replayed
// as another (and an argument-less message still carries something only a key holder can make). The workflows'
// interceptors (src/workflows/interceptors.ts) open the envelope and drop, with a record, whatever does not.
// Pure: the workflow bundle imports it.

/** The one field of the stand-in the worker's codec decodes a refused payload to (never in a value paygate sends). */
export const REFUSED_PAYLOAD_FIELD = '__paygateRefusedPayload';

/** Why a payload did not open: not sealed at all, or sealed under no key held / tampered / for another workflow. */
export type PayloadRefusal = 'not-sealed' | 'unopenable';

/** Why a message was dropped or rejected. */
export type MessageRefusal = PayloadRefusal | 'no-envelope' | 'for-another-message' | 'no-input';

/** The stand-in value a refused payload becomes on the worker (see EncryptionCodec): plain data a converter reads. */
export function refusedPayloadValue(reason: PayloadRefusal): Readonly<Record<string, PayloadRefusal>> {
  return { [REFUSED_PAYLOAD_FIELD]: reason };
}

/** The refusal a value stands for, if it is a refused payload's stand-in. */
export function payloadRefusalOf(value: unknown): PayloadRefusal | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const reason = (value as Record<string, unknown>)[REFUSED_PAYLOAD_FIELD];
  return reason === 'not-sealed' || reason === 'unopenable' ? reason : undefined;
}

/** The one argument of every signal and update paygate sends. */
export interface MessageEnvelope {
  /** the signal's or update's name: the message this argument was made for */
  readonly paygateMessage: string;
  /** the message's own arguments */
  readonly args: readonly unknown[];
}

export function messageEnvelope(name: string, args: readonly unknown[]): [MessageEnvelope] {
  return [{ paygateMessage: name, args: [...args] }];
}

export type OpenedMessage =
  | { readonly ok: true; readonly args: unknown[] }
  | { readonly ok: false; readonly reason: MessageRefusal };

/**
 * The arguments of message `name`: the envelope's, when `args` is exactly one envelope made for `name`. Otherwise
 * why not — a refused payload's reason first, so a plain or forged argument is named as such.
 */
export function openMessage(name: string, args: readonly unknown[]): OpenedMessage {
  const refusal = args.map(payloadRefusalOf).find((reason) => reason !== undefined);
  if (refusal) return { ok: false, reason: refusal };
  const [only] = args;
  if (args.length !== 1 || typeof only !== 'object' || only === null) return { ok: false, reason: 'no-envelope' };
  const { paygateMessage, args: inner } = only as Partial<MessageEnvelope>;
  if (typeof paygateMessage !== 'string' || !Array.isArray(inner)) return { ok: false, reason: 'no-envelope' };
  if (paygateMessage !== name) return { ok: false, reason: 'for-another-message' };
  return { ok: true, args: [...inner] };
}

/** What a workflow refused, as the worker logs and counts it (never a payload's content). */
export interface RefusalRecord {
  readonly kind: 'signal' | 'update' | 'activity-result' | 'workflow-input';
  /** the signal, update or activity type, or the workflow type for its input */
  readonly name: string;
  readonly reason: MessageRefusal;
}

/** The sink through which the workflows report a refusal to the worker (not called while replaying). */
export type RefusalSinks = {
  paygateRefusals: { record(refusal: RefusalRecord): void };
};

/** The patch marker of a workflow started since messages are bound: only its envelopes are accepted. */
export const BOUND_MESSAGES_PATCH = 'paygate-bound-messages';

/**
 * What every state-changing update carries: a fresh random nonce (at least 16 characters). The argument is
 * sealed by the payload codec, so only a holder of the keyring can make one, and the workflow takes each
 * nonce once: whoever reaches the Temporal frontend without the keyring can neither send a resend or a
 * confirm nor replay a sealed argument copied from a history.
 */
export interface UpdateProof {
  readonly nonce: string;
}

/** The refusal of an update without a fresh proof (not a catalog error: paygate never sends one). */
export const UPDATE_NOT_AUTHORIZED = 'UpdateNotAuthorized';
