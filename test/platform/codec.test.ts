// The payload codec is paygate's trust check on everything that comes back from Temporal: only what a
// holder of the keyring sealed (current key or a retired one) can be read; plain, tampered, or sealed
// under an unknown key is refused.
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { EncryptionCodec, REFUSED_UNOPENABLE, REFUSED_UNSEALED } from '../../src/platform/temporal/codec.js';

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
