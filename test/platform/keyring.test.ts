import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { createFieldCipher } from '../../src/platform/security/field-cipher.js';
import { EncryptionCodec, ENCRYPTED_ENCODING } from '../../src/platform/temporal/codec.js';

const CI = 'wJ9vTQ0sSE9iY2pBT3JvZ3l3b3d6d1ZrY2F1d3N3b2d6d1ZrY2F1d3N3b2d6d1ZrY2F1d3N3b2d6d1Zr==';

describe('keyring', () => {
  it('parses key specs and names what is wrong without echoing key material', () => {
    const spec = `${generateKeyringSpec('new')},${generateKeyringSpec('old')}`;
    expect([...parseKeyringSpec(spec).keys()]).toEqual(['new', 'old']);
    expect(() => parseKeyringSpec('')).toThrow(/at least one key/);
    expect(() => parseKeyringSpec('k1:c2hvcnQ=')).toThrow(/32 bytes/);
    expect(() => parseKeyringSpec('nocolon')).toThrow(/<key id>:<base64/);
    const dup = generateKeyringSpec('a');
    expect(() => parseKeyringSpec(`${dup},${dup}`)).toThrow(/twice/);
  });

  it('opens values sealed with an older key after rotation, and never with the wrong purpose', () => {
    const oldSpec = generateKeyringSpec('old');
    const before = createKeyring(parseKeyringSpec(oldSpec));
    const { keyId, sealed } = before.seal('db-field', Buffer.from('secret'));
    const after = createKeyring(parseKeyringSpec(`${generateKeyringSpec('new')},${oldSpec}`));
    expect(after.currentKeyId).toBe('new');
    expect(after.open('db-field', keyId, sealed).toString()).toBe('secret');
    expect(() => after.open('temporal-payload', keyId, sealed)).toThrow();
    expect(() => after.open('db-field', 'missing', sealed)).toThrow(/no key with id 'missing'/);
  });
});

describe('keyed MAC', () => {
  it('is keyed (no key, no digest), purpose-separated, and recomputable under an older key after rotation', () => {
    const oldSpec = generateKeyringSpec('old');
    const before = createKeyring(parseKeyringSpec(oldSpec));
    const made = before.mac('request-fingerprint', 'POST /v2/request/subscribe {"card_no":"4111111111111111"}');
    expect(made.keyId).toBe('old');
    const other = createKeyring(parseKeyringSpec(generateKeyringSpec('old')));
    expect(other.mac('request-fingerprint', 'POST /v2/request/subscribe {"card_no":"4111111111111111"}').digest).not.toBe(
      made.digest,
    );
    expect(before.mac('db-field', 'POST /v2/request/subscribe {"card_no":"4111111111111111"}').digest).not.toBe(made.digest);
    const rotated = createKeyring(parseKeyringSpec(`${generateKeyringSpec('new')},${oldSpec}`));
    expect(rotated.mac('request-fingerprint', 'POST /v2/request/subscribe {"card_no":"4111111111111111"}', 'old').digest).toBe(
      made.digest,
    );
    expect(rotated.mac('request-fingerprint', 'x').keyId).toBe('new');
  });
});

describe('field cipher', () => {
  const cipher = createFieldCipher(createKeyring(parseKeyringSpec(generateKeyringSpec('k1'))));

  it('round-trips and hides the value', () => {
    const stored = cipher.seal(CI, 'verification:abc:unique');
    expect(stored.startsWith('v1.k1.')).toBe(true);
    expect(stored).not.toContain(CI.slice(0, 16));
    expect(cipher.open(stored, 'verification:abc:unique')).toBe(CI);
  });

  it('refuses a value moved to another row', () => {
    const stored = cipher.seal(CI, 'verification:abc:unique');
    expect(() => cipher.open(stored, 'verification:other:unique')).toThrow();
  });
});

describe('Temporal payload codec', () => {
  it('encrypts payloads so the plain text is absent, and decodes them back', async () => {
    const codec = new EncryptionCodec(createKeyring(parseKeyringSpec(generateKeyringSpec('k1'))));
    const payload = defaultPayloadConverter.toPayload({ name: '홍길동', phone: '01012345678', unique: CI });
    const [encoded] = await codec.encode([payload]);
    const raw = Buffer.from(encoded!.data!).toString('latin1') + Buffer.from(encoded!.data!).toString('utf8');
    expect(raw).not.toContain('01012345678');
    expect(raw).not.toContain(CI.slice(0, 20));
    expect(new TextDecoder().decode(encoded!.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
    const [decoded] = await codec.decode([encoded!]);
    expect(defaultPayloadConverter.fromPayload(decoded!)).toEqual({ name: '홍길동', phone: '01012345678', unique: CI });
  });

  it('refuses payloads it did not seal (test/platform/codec.test.ts covers every case)', async () => {
    const codec = new EncryptionCodec(createKeyring(parseKeyringSpec(generateKeyringSpec('k1'))));
    const [decoded] = await codec.decode([defaultPayloadConverter.toPayload('hello')]);
    expect(() => defaultPayloadConverter.fromPayload(decoded!)).toThrow(/refused\/not-sealed-by-paygate/);
  });
});
