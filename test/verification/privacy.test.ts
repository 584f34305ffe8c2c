// No personal data in plain text anywhere paygate keeps or emits it: the engine's raw workflow history
// (payloads sealed by the codec, key id in metadata), the verifications table (sealed columns), and the
// logs of the API, the sandbox gateways and the worker's activities.
import type { Payload } from '@temporalio/common';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFieldCipher } from '../../src/platform/security/field-cipher.js';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { createVerificationStore } from '../../src/verification/store.js';
import { EncryptionCodec, ENCRYPTED_ENCODING, REFUSED_UNOPENABLE } from '../../src/platform/temporal/codec.js';
import { verificationWorkflowId } from '../../src/verification/contract.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { workerLogs, type HistoryEvent } from '../helpers/temporal.js';
import { freshPhone, verificationClient, type VerificationClient } from './fixtures.js';

const KEY_SPEC = generateKeyringSpec('key-2026a');

let t: TestApp;
let project: TestProject;
let api: VerificationClient;

/** One person's every sensitive value, filled in as the flow reveals them. */
const secrets: Record<string, string> = {
  name: '최비밀',
  identityNo: '7712252',
  birth: '19771225',
  phone: freshPhone(),
};
let receiptIds: string[] = [];

beforeAll(async () => {
  t = await buildTestApp({ withTemporal: true, keyring: createKeyring(parseKeyringSpec(KEY_SPEC)) });
  project = await t.createProject();
  api = verificationClient(t, project);

  // An SMS verification with a wrong OTP, a resend and a confirm; a pass verification; a failed send.
  const sms = await api.requested({ username: secrets.name, identity_no: secrets.identityNo, phone: secrets.phone });
  const wrongOtp = (await api.latestOtp(secrets.phone!)) === '111111' ? '222222' : '111111';
  expect((await api.confirm(sms.receiptId, wrongOtp)).status).toBe(500);
  secrets.firstOtp = await api.latestOtp(secrets.phone!);
  expect((await api.realarm(sms.receiptId)).status).toBe(200);
  secrets.otp = await api.latestOtp(secrets.phone!);
  const confirmed = await api.confirm(sms.receiptId, secrets.otp);
  expect(confirmed.status).toBe(200);
  const person = confirmed.body.authenticate_data as Record<string, string>;
  secrets.ci = person.unique!;
  secrets.di = person.di!;
  expect(person.name).toBe(secrets.name);
  expect(person.birth).toBe(secrets.birth);

  const passPhone = freshPhone();
  secrets.passPhone = passPhone;
  const pass = await api.requested({
    authenticate_type: 'pass',
    username: secrets.name,
    identity_no: secrets.identityNo,
    phone: passPhone,
  });
  expect((await api.confirm(pass.receiptId, '')).status).toBe(200);

  expect((await api.request({ username: secrets.name, identity_no: secrets.identityNo, phone: '01000000000' })).status).toBe(400);
  receiptIds = [sms.receiptId, pass.receiptId];
});
afterAll(async () => {
  await t?.close();
});

/** The plain-text forms a leak could take: the value itself, its JSON string and their base64 spellings. */
function leakForms(value: string): string[] {
  const forms = new Set<string>([value, JSON.stringify(value)]);
  for (const form of [...forms]) {
    const bytes = Buffer.from(form, 'utf8');
    // base64 of a value inside a larger buffer depends on its offset mod 3: drop the edge characters
    for (let shift = 0; shift < 3; shift++) {
      const encoded = Buffer.concat([Buffer.alloc(shift), bytes]).toString('base64');
      const inner = encoded.slice(Math.ceil((shift * 4) / 3) + 1, -4);
      if (inner.length >= 8) forms.add(inner);
    }
  }
  return [...forms];
}

function expectNoSecrets(haystack: string, where: string, which = Object.keys(secrets)): void {
  for (const key of which) {
    for (const form of leakForms(secrets[key]!)) {
      expect(haystack.includes(form), `${key} (${form}) in ${where}`).toBe(false);
    }
  }
}

function payloadsOf(value: unknown, found: Payload[] = [], seen = new Set<unknown>()): Payload[] {
  if (typeof value !== 'object' || value === null || seen.has(value) || value instanceof Uint8Array) return found;
  seen.add(value);
  const candidate = value as { data?: unknown; metadata?: unknown };
  if (candidate.data instanceof Uint8Array && typeof candidate.metadata === 'object' && candidate.metadata !== null) {
    found.push(value as Payload);
    return found;
  }
  for (const inner of Object.values(value)) payloadsOf(inner, found, seen);
  return found;
}

/** What the SDK writes in a local activity's marker as `data`, plain: its own bookkeeping, nothing of the activity's. */
const LOCAL_ACTIVITY_MARKER_DATA = [
  'activity_id',
  'activity_type',
  'attempt',
  'backoff',
  'complete_time',
  'original_schedule_time',
  'seq',
];

/**
 * The privacy rule for a history: every payload carrying merchant or personal data is sealed by the codec. The SDK
 * writes three things itself, plain, that carry none: a patch's marker (the patch's name), its TemporalChangeVersion
 * search attribute, and a local activity marker's `data` (activity type, id, attempt, times). Everything else of a
 * local activity's marker — its result, its failure's details — is the activity's own and must be sealed.
 */
function sealablePayloadsOf(events: HistoryEvent[]): Payload[] {
  const kept: unknown[] = [];
  for (const e of events) {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_patch') continue;
    const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    if (fields != null && Object.keys(fields).every((name) => name === 'TemporalChangeVersion')) continue;
    if (marker?.markerName === 'core_local_activity') {
      const { data: _sdkOwn, ...activityOwn } = marker.details ?? {};
      kept.push({ ...e, markerRecordedEventAttributes: { ...marker, details: activityOwn } });
      continue;
    }
    kept.push(e);
  }
  return payloadsOf(kept);
}

/** The `data` of each local activity marker, parsed: what the rule above leaves plain. */
function localActivityMarkerData(events: HistoryEvent[]): Record<string, unknown>[] {
  return events.flatMap((e) => {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return [];
    const payloads = marker.details?.data?.payloads ?? [];
    expect(payloads).toHaveLength(1);
    expect(Buffer.from(payloads[0]!.metadata!.encoding!).toString()).toBe('json/plain');
    return [JSON.parse(Buffer.from(payloads[0]!.data!).toString('utf8')) as Record<string, unknown>];
  });
}

/**
 * Each payload opened as the worker opens it: sealed for the workflow, or for one of its activities (the seal names
 * which, so one of the two opens a genuine payload).
 */
async function openAll(codec: EncryptionCodec, payloads: Payload[], workflowId: string): Promise<Payload[]> {
  const opened: Payload[] = [];
  for (const payload of payloads) {
    const [asWorkflow] = await codec.decode([payload], { type: 'workflow', namespace: 'default', workflowId });
    if (!asWorkflow!.metadata?.encoding || !new TextDecoder().decode(asWorkflow!.metadata.encoding).startsWith('refused/')) {
      opened.push(asWorkflow!);
      continue;
    }
    const [asActivity] = await codec.decode([payload], { type: 'activity', namespace: 'default', workflowId, isLocal: false });
    opened.push(asActivity!);
  }
  return opened;
}

/** Every byte of a history in a searchable text form: bytes as utf8 and as base64. */
function historyText(events: HistoryEvent[]): string {
  return JSON.stringify(events, (_key, v: unknown) =>
    v instanceof Uint8Array ? `${Buffer.from(v).toString('utf8')}|${Buffer.from(v).toString('base64')}` : v,
  );
}

describe('raw workflow history', () => {
  it('holds only sealed payloads (AES-GCM codec, key id in metadata) and none of the personal data in plain text', async () => {
    for (const receiptId of receiptIds) {
      const events = await t.temporal!.rawHistory(verificationWorkflowId(receiptId));
      // each step reaching the PG ran as a local activity; what its marker keeps plain is the SDK's bookkeeping only
      const markerData = localActivityMarkerData(events);
      expect(markerData.length).toBeGreaterThanOrEqual(receiptId === receiptIds[0] ? 4 : 2);
      for (const data of markerData) expect(Object.keys(data).sort()).toEqual(LOCAL_ACTIVITY_MARKER_DATA);
      const payloads = sealablePayloadsOf(events);
      // the person (workflow input), the OTP (update argument) and the gateway's answer all travel as payloads
      expect(payloads.length).toBeGreaterThanOrEqual(5);
      for (const p of payloads) {
        expect(Buffer.from(p.metadata!.encoding!).toString()).toBe(ENCRYPTED_ENCODING);
        expect(Buffer.from(p.metadata!['encryption-key-id']!).toString()).toBe('key-2026a');
        const bytes = Buffer.from(p.data!);
        for (const [key, value] of Object.entries(secrets)) {
          expect(bytes.includes(Buffer.from(value, 'utf8')), `${key} in a payload of ${receiptId}`).toBe(false);
        }
      }
      // outside the payloads too (failure messages, headers, memo): the non-numeric secrets and the phone
      expectNoSecrets(historyText(events), `history of ${receiptId}`, ['name', 'ci', 'di', 'phone', 'passPhone']);

      // control: the same payloads opened with the keyring do hold the person, so the scan above looked in the right place
      const opened = await openAll(new EncryptionCodec(t.deps.keyring!), payloads, verificationWorkflowId(receiptId));
      const plain = opened.map((p) => Buffer.from(p.data ?? new Uint8Array()).toString('utf8')).join('\n');
      expect(plain).toContain(secrets.identityNo);
      // the confirm step stores CI and DI itself: they never enter the history, not even sealed
      expect(plain).not.toContain(secrets.ci);
      expect(plain).not.toContain(secrets.di);
    }
  });

  it('a rotated keyring (new current key, old key kept) still opens the history sealed with the old key', async () => {
    const rotated = createKeyring(parseKeyringSpec(`${generateKeyringSpec('key-2026b')},${KEY_SPEC}`));
    expect(rotated.currentKeyId).toBe('key-2026b');
    const workflowId = verificationWorkflowId(receiptIds[0]!);
    const events = await t.temporal!.rawHistory(workflowId);
    const opened = await openAll(new EncryptionCodec(rotated), sealablePayloadsOf(events), workflowId);
    expect(opened.map((p) => Buffer.from(p.data ?? new Uint8Array()).toString('utf8')).join('\n')).toContain(secrets.identityNo);
    // a keyring with another key under the same id opens nothing: every payload comes back refused
    const stranger = createKeyring(parseKeyringSpec(generateKeyringSpec('key-2026a')));
    const refused = await openAll(new EncryptionCodec(stranger), sealablePayloadsOf(events), workflowId);
    expect(refused.length).toBeGreaterThan(0);
    for (const p of refused) {
      expect(new TextDecoder().decode(p.metadata?.encoding)).toBe(REFUSED_UNOPENABLE);
      expect(p.data).toHaveLength(0);
    }
  });
});

describe('database', () => {
  it('the verifications table holds personal data only sealed, and the store opens it again', async () => {
    const rows = await t.deps.database.db.selectFrom('verifications').selectAll().execute();
    expect(rows.length).toBeGreaterThanOrEqual(3);
    expectNoSecrets(JSON.stringify(rows), 'verifications');
    const verified = rows.filter((r) => r.status === 12);
    expect(verified).toHaveLength(2);
    for (const r of verified) {
      for (const column of [r.name_sealed, r.phone_sealed, r.birth_sealed, r.unique_sealed, r.di_sealed]) {
        expect(column).toMatch(/^v1\.key-2026a\./);
      }
    }
    const store = createVerificationStore(t.deps.database.db, createFieldCipher(t.deps.keyring!));
    const sms = verified.find((r) => r.receipt_id === receiptIds[0])!;
    expect(store.openPerson(sms)).toMatchObject({
      name: secrets.name,
      phone: secrets.phone,
      birth: secrets.birth,
      unique: secrets.ci,
      di: secrets.di,
    });
  });

  it('no table of the database holds them in plain text', async () => {
    const { rows: tables } = await sql<{ table_name: string }>`
      select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(
      t.deps.database.db,
    );
    const names = tables.map((r) => r.table_name);
    expect(names).toContain('verifications');
    expect(names).toContain('projects');
    let dump = '';
    for (const table of names) {
      const { rows } = await sql`select * from ${sql.table(table)}`.execute(t.deps.database.db);
      dump += JSON.stringify(rows);
    }
    expect(dump).toContain(receiptIds[0]);
    expectNoSecrets(dump, 'the database');
  });
});

describe('logs', () => {
  it('the captured logs (API, sandbox gateways) contain none of the personal data', () => {
    const logs = t.logs();
    // control: the requests were logged
    expect(logs).toContain('/v2/request/authentication');
    expect(logs).toContain('/v2/authenticate/confirm');
    expectNoSecrets(logs, 'the logs');
  });

  it('the Temporal worker logs (SDK, activities, workflows) contain none of the personal data', () => {
    const logs = workerLogs();
    // control: the worker did log (its lifecycle and the activity failures of the wrong OTP and failed send)
    expect(logs).toContain('Worker state changed');
    expect(logs).toContain('Activity failed');
    expectNoSecrets(logs, 'the worker logs');
  });
});
