// The payload codec is paygate's trust check on everything that comes back from Temporal: only what a
// holder of the keyring sealed (current key or a retired one) can be read; plain, tampered, or sealed
// under an unknown key is refused; and what was sealed for one workflow opens in no other.
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { temporal } from '@temporalio/proto';
import { EncryptionCodec, REFUSED_UNOPENABLE, REFUSED_UNSEALED } from '../../src/platform/temporal/codec.js';
import { messageEnvelope, openMessage, payloadRefusalOf, refusedPayloadValue } from '../../src/platform/temporal/messages.js';

const person = { name: '홍길동', ci: 'forged-ci' };
const codecOf = (spec: string) => new EncryptionCodec(createKeyring(parseKeyringSpec(spec)));
const read = async (codec: EncryptionCodec, payload: Payload) => {
  const [decoded] = await codec.decode([payload]);
  return defaultPayloadConverter.fromPayload(decoded!);
};

describe('EncryptionCodec.decode', () => {
  const current = generateKeyringSpec('current');
  const retired = generateKeyringSpec('retired');

  it('opens what it sealed', async () => {
    const codec = codecOf(current);
    const [sealed] = await codec.encode([defaultPayloadConverter.toPayload(person)]);
    expect(await read(codec, sealed!)).toEqual(person);
  });

  it('opens what a retired key sealed, after rotation', async () => {
    const [sealed] = await codecOf(retired).encode([defaultPayloadConverter.toPayload(person)]);
    expect(await read(codecOf(`${current},${retired}`), sealed!)).toEqual(person);
  });

  it('refuses a plain payload: reading it fails, naming the refusal', async () => {
    const codec = codecOf(current);
    const [decoded] = await codec.decode([defaultPayloadConverter.toPayload(person)]);
    expect(new TextDecoder().decode(decoded!.metadata!.encoding)).toBe(REFUSED_UNSEALED);
    expect(decoded!.data).toHaveLength(0);
    await expect(read(codec, defaultPayloadConverter.toPayload(person))).rejects.toThrow(REFUSED_UNSEALED);
    // even a payload that only claims to be binary/null (no data to seal) is refused
    await expect(read(codec, defaultPayloadConverter.toPayload(undefined))).rejects.toThrow(REFUSED_UNSEALED);
  });

  it('refuses a sealed payload whose bytes were changed, whose key id was changed, or with no key id', async () => {
    const codec = codecOf(`${current},${retired}`);
    const [sealed] = await codec.encode([defaultPayloadConverter.toPayload(person)]);
    const flipped = new Uint8Array(sealed!.data!);
    flipped[flipped.length - 20]! ^= 0x01;
    const otherKeyId = { ...sealed!.metadata, 'encryption-key-id': new TextEncoder().encode('retired') };
    const { 'encryption-key-id': _dropped, ...noKeyId } = sealed!.metadata!;
    for (const tampered of [
      { metadata: sealed!.metadata, data: flipped },
      { metadata: otherKeyId, data: sealed!.data },
      { metadata: noKeyId, data: sealed!.data },
    ]) {
      await expect(read(codec, tampered)).rejects.toThrow(REFUSED_UNOPENABLE);
    }
  });

  it('refuses a payload sealed under a keyring it does not hold', async () => {
    const [sealed] = await codecOf(generateKeyringSpec('current')).encode([defaultPayloadConverter.toPayload(person)]);
    await expect(read(codecOf(current), sealed!)).rejects.toThrow(REFUSED_UNOPENABLE);
  });
});

describe('EncryptionCodec: a payload opens only where it was sealed for', () => {
  const spec = generateKeyringSpec('current');
  const workflowOf = (workflowId: string, namespace = 'default') => ({ type: 'workflow' as const, namespace, workflowId });
  const activityOf = (workflowId: string) => ({ type: 'activity' as const, namespace: 'default', workflowId, isLocal: false });
  const sealFor = async (context: Parameters<EncryptionCodec['encode']>[1]) =>
    (await codecOf(spec).encode([defaultPayloadConverter.toPayload(person)], context))[0]!;
  const readAs = async (codec: EncryptionCodec, payload: Payload, context: Parameters<EncryptionCodec['decode']>[1]) => {
    const [decoded] = await codec.decode([payload], context);
    return defaultPayloadConverter.fromPayload(decoded!);
  };

  it('opens in the workflow it was sealed for, and in no other workflow, namespace, or as an activity payload', async () => {
    const codec = codecOf(spec);
    const sealed = await sealFor(workflowOf('reserve-A'));
    expect(await readAs(codec, sealed, workflowOf('reserve-A'))).toEqual(person);
    for (const elsewhere of [workflowOf('reserve-B'), workflowOf('reserve-A', 'other'), activityOf('reserve-A'), undefined]) {
      await expect(readAs(codec, sealed, elsewhere)).rejects.toThrow(REFUSED_UNOPENABLE);
    }
  });

  it("an activity's payload opens only for an activity of the same workflow", async () => {
    const codec = codecOf(spec);
    const sealed = await sealFor(activityOf('escrow-A'));
    expect(await readAs(codec, sealed, activityOf('escrow-A'))).toEqual(person);
    await expect(readAs(codec, sealed, activityOf('escrow-B'))).rejects.toThrow(REFUSED_UNOPENABLE);
    await expect(readAs(codec, sealed, workflowOf('escrow-A'))).rejects.toThrow(REFUSED_UNOPENABLE);
  });

  it('a payload sealed before binding existed (no binding mark) still opens, so runs of an earlier version finish', async () => {
    const keyring = createKeyring(parseKeyringSpec(spec));
    const plain = temporal.api.common.v1.Payload.encode(defaultPayloadConverter.toPayload(person)).finish();
    const { keyId, sealed } = keyring.seal('temporal-payload', plain);
    const legacy: Payload = {
      metadata: { encoding: new TextEncoder().encode('binary/encrypted'), 'encryption-key-id': new TextEncoder().encode(keyId) },
      data: new Uint8Array(sealed),
    };
    expect(await readAs(codecOf(spec), legacy, workflowOf('any'))).toEqual(person);
    // but a bound payload stripped of its mark does not open as one of those
    const bound = await sealFor(workflowOf('reserve-A'));
    const { 'encryption-binding': _mark, ...unmarked } = bound.metadata!;
    await expect(readAs(codecOf(spec), { metadata: unmarked, data: bound.data }, workflowOf('reserve-A'))).rejects.toThrow(
      REFUSED_UNOPENABLE,
    );
  });

  it("on the worker a refused payload becomes a stand-in value the workflows' interceptors recognise, never an error", async () => {
    const worker = new EncryptionCodec(createKeyring(parseKeyringSpec(spec)), 'worker');
    const sealed = await sealFor(workflowOf('reserve-A'));
    expect(payloadRefusalOf(await readAs(worker, sealed, workflowOf('reserve-B')))).toBe('unopenable');
    expect(payloadRefusalOf(await readAs(worker, defaultPayloadConverter.toPayload(person), workflowOf('reserve-B')))).toBe(
      'not-sealed',
    );
    expect(payloadRefusalOf(await readAs(worker, sealed, workflowOf('reserve-A')))).toBeUndefined();
  });
});

describe('openMessage: a message is accepted only in its own envelope', () => {
  it('opens the envelope of the named message and refuses every other form, naming why', () => {
    expect(openMessage('revokeReserve', messageEnvelope('revokeReserve', [{ nonce: 'n' }]))).toEqual({
      ok: true,
      args: [{ nonce: 'n' }],
    });
    expect(openMessage('endpointDisabled', messageEnvelope('endpointDisabled', []))).toEqual({ ok: true, args: [] });
    expect(openMessage('resendOtp', messageEnvelope('confirmOtp', [{ nonce: 'n' }]))).toEqual({
      ok: false,
      reason: 'for-another-message',
    });
    expect(openMessage('resendOtp', [])).toEqual({ ok: false, reason: 'no-envelope' });
    expect(openMessage('resendOtp', [{ nonce: 'n' }])).toEqual({ ok: false, reason: 'no-envelope' });
    expect(openMessage('resendOtp', ['garbage'])).toEqual({ ok: false, reason: 'no-envelope' });
    expect(openMessage('resendOtp', [...messageEnvelope('resendOtp', []), 'extra'])).toEqual({
      ok: false,
      reason: 'no-envelope',
    });
    expect(openMessage('resendOtp', [refusedPayloadValue('not-sealed')])).toEqual({ ok: false, reason: 'not-sealed' });
  });
});
