// Logs people can read and search: LOG_FORMAT (pretty at a terminal, JSON otherwise), pretty lines that keep the
// redaction, request lines carrying the request id and the ids the request learned (a charge's receipt, its
// feedback delivery and that delivery's workflow), and the workflow bundler's webpack report kept at debug.
import { Writable } from 'node:stream';
import { bundleWorkflowCode } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/platform/config/index.js';
import { createLogger, resolveLogFormat } from '../../src/platform/logger.js';
import { createBundlerLogger } from '../../src/platform/temporal/runtime.js';
import { WORKFLOW_BUNDLER_OPTIONS, WORKFLOWS_PATH } from '../../src/platform/temporal/workflow-bundle.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { workerLogs } from '../helpers/temporal.js';
import { ApiError } from '../../src/platform/errors.js';
import { keyInClient, TEST_CARD } from '../payments/key-in-fixtures.js';
import { freshPhone, verificationClient } from '../verification/fixtures.js';
import { type Receiver, startReceiver, untilDelivery } from '../webhooks/fixtures.js';

function capture(): { stream: Writable; text(): string } {
  const chunks: string[] = [];
  return {
    stream: new Writable({
      write(chunk: Buffer | string, _encoding, done) {
        chunks.push(chunk.toString());
        done();
      },
    }),
    text: () => chunks.join(''),
  };
}

type Line = Record<string, unknown>;
const jsonLines = (text: string): Line[] =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Line);

describe('LOG_FORMAT', () => {
  it('is pretty or json, any case; unset leaves the choice to the terminal test', () => {
    expect(parseConfig({}).logFormat).toBeUndefined();
    expect(parseConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(parseConfig({ LOG_FORMAT: ' JSON ' }).logFormat).toBe('json');
    expect(() => parseConfig({ LOG_FORMAT: 'xml' })).toThrow(ConfigError);
    try {
      parseConfig({ LOG_FORMAT: 'xml' });
    } catch (err) {
      expect((err as ConfigError).problems.map((p) => p.variable)).toEqual(['LOG_FORMAT']);
    }
  });

  it('unset: pretty when stdout is a terminal, JSON when it is a pipe or a file; set: what it says', () => {
    expect(resolveLogFormat(undefined, true)).toBe('pretty');
    expect(resolveLogFormat(undefined, false)).toBe('json');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
  });

  it('pretty prints one line per event, after redaction', () => {
    const out = capture();
    const logger = createLogger({ format: 'pretty', destination: out.stream, level: 'info' });
    logger
      .child({ component: 'api' })
      .info({ receipt_id: 'r-1', card_no: TEST_CARD.card_no, nested: { otp: '123456' } }, 'charged');
    logger.warn('second event');
    logger.debug('below the level');
    const lines = out.text().trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: \(api\) charged /);
    expect(lines[0]).toContain('"receipt_id":"r-1"');
    expect(lines[0]).toContain('[REDACTED]');
    expect(out.text()).not.toContain(TEST_CARD.card_no);
    expect(out.text()).not.toContain('123456');
    expect(lines[1]).toMatch(/WARN: second event$/);
    // no escape codes when writing somewhere other than a terminal
    expect(out.text()).not.toContain('\u001b[');
  });

  it('json writes one JSON object per line', () => {
    const out = capture();
    createLogger({ format: 'json', destination: out.stream }).info({ receipt_id: 'r-2' }, 'json line');
    expect(jsonLines(out.text())).toEqual([expect.objectContaining({ msg: 'json line', receipt_id: 'r-2', level: 30 })]);
  });

  // strings, numbers and booleans skip the redactor (nothing in them to censor): they must come out as before,
  // while objects in bindings and in lines, and the sensitive top-level keys, are still censored
  it('writes plain values as they are and still censors objects, in child bindings and in lines', () => {
    const out = capture();
    const child = createLogger({ format: 'json', destination: out.stream }).child({
      reqId: 'req "1"\n',
      attempt: 3,
      retry: false,
      ratio: Number.NaN,
      body: { card_no: '4111111111111111', order_id: 'o-1' },
    });
    child.child({ component: 'api' }, { level: 'warn' }).warn(
      {
        count: 7,
        ok: true,
        secret_key: 'sk-live',
        nested: { deeper: { otp: '123456', kept: 'k' } },
        list: [{ phone: '01012345678' }],
      },
      'values',
    );
    const text = out.text();
    expect(jsonLines(text)).toEqual([
      expect.objectContaining({
        reqId: 'req "1"\n',
        attempt: 3,
        retry: false,
        ratio: null,
        body: { card_no: '[REDACTED]', order_id: 'o-1' },
        component: 'api',
        count: 7,
        ok: true,
        secret_key: '[REDACTED]',
        nested: { deeper: { otp: '[REDACTED]', kept: 'k' } },
        list: [{ phone: '[REDACTED]' }],
      }),
    ]);
    for (const secret of ['4111111111111111', 'sk-live', '123456', '01012345678']) expect(text).not.toContain(secret);
  });

  // objects without a censored name skip the redactor too; one with a censored header still goes through it
  it("censors a logged request's credentials, and writes objects with nothing to censor (a Buffer) as they are", () => {
    const out = capture();
    const logger = createLogger({ format: 'json', destination: out.stream });
    logger.info({ req: { method: 'GET', url: '/v2/receipt/r-1', headers: { authorization: 'Basic c2VjcmV0', host: 'h' } } }, 'a');
    logger.info({ res: { statusCode: 200 }, payload: Buffer.from('hi'), when: new Date(0) }, 'b');
    const text = out.text();
    expect(jsonLines(text)).toEqual([
      expect.objectContaining({
        req: { method: 'GET', url: '/v2/receipt/r-1', headers: { authorization: '[REDACTED]', host: 'h' } },
      }),
      expect.objectContaining({
        res: { statusCode: 200 },
        payload: { type: 'Buffer', data: [104, 105] },
        when: '1970-01-01T00:00:00.000Z',
      }),
    ]);
    expect(text).not.toContain('c2VjcmV0');
  });
});

describe('request log lines', () => {
  let t: TestApp;
  let feedback: Receiver;
  beforeAll(async () => {
    t = await buildTestApp({ withTemporal: true });
    feedback = await startReceiver('/feedback');
  }, 120_000);
  afterAll(async () => {
    await feedback?.close();
    await t?.close();
  });

  it("carry the request id, and the charge's receipt id, its feedback delivery id and that delivery's workflow id", async () => {
    const project = await t.createProject();
    const api = keyInClient(t, project);
    const key = await api.issuedKey();
    const res = await api.charge(key, { feedback_url: feedback.url });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const receiptId = res.body.receipt_id as string;
    const [delivery] = await t.deps.database.db
      .selectFrom('webhook_deliveries')
      .select('delivery_id')
      .where('application_id', '=', project.applicationId)
      .execute();
    await untilDelivery(t, delivery!.delivery_id, 'done', 1);

    const lines = jsonLines(t.logs());
    const incoming = lines.find(
      (l) => l.msg === 'incoming request' && (l.req as Line | undefined)?.url === '/v2/subscribe/payment',
    );
    expect(incoming?.reqId).toEqual(expect.any(String));
    const ofRequest = lines.filter((l) => l.reqId === incoming!.reqId);
    const completed = ofRequest.find((l) => l.msg === 'request completed');
    expect(completed).toMatchObject({
      reqId: incoming!.reqId,
      receipt_id: receiptId,
      delivery_id: delivery!.delivery_id,
    });
    // the delivery is the dispatcher's row: no workflow was started for it
    expect(completed?.workflow_id).toBeUndefined();
    // a key is bound once, whatever learned it again
    const raw = t
      .logs()
      .split('\n')
      .find((l) => l.includes('"request completed"') && l.includes(String(incoming!.reqId)))!;
    expect(raw.match(/"receipt_id"/g)).toHaveLength(1);
    // and the next request starts without them
    const lookup = await api.get(`/v2/receipt/${receiptId}`);
    expect(lookup.status).toBe(200);
    const after = jsonLines(t.logs()).filter((l) => l.msg === 'request completed');
    const last = after[after.length - 1]!;
    expect(last.reqId).not.toBe(incoming!.reqId);
    expect(last.receipt_id).toBe(receiptId); // from the path parameter
    expect(last.delivery_id).toBeUndefined();
  }, 60_000);

  it('a verification request carries its receipt id and its workflow id', async () => {
    const project = await t.createProject();
    const phone = freshPhone();
    const res = await verificationClient(t, project).request({ phone });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const receiptId = res.body.receipt_id as string;
    const completed = jsonLines(t.logs()).find((l) => l.msg === 'request completed' && l.receipt_id === receiptId);
    expect(completed).toMatchObject({ reqId: expect.any(String), workflow_id: `verification:${receiptId}` });
    expect(t.logs()).not.toContain(phone);
  }, 60_000);

  // a wrong OTP is the customer's mistake, answered 500 (2405) as the spec says: one info line with its code, no stack,
  // no warning or error for it anywhere (the API's handler, the worker's "Activity failed")
  it('a wrong OTP writes one info line with its code: no warning, no error, no stack', async () => {
    const project = await t.createProject();
    const api = verificationClient(t, project);
    const { receiptId, phone } = await api.requested();
    const wrongOtp = (await api.latestOtp(phone)) === '111111' ? '222222' : '111111';
    const res = await api.confirm(receiptId, wrongOtp);
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ error_code: 'AUTH_CONFIRM_FAILED', code: 2405 });

    const lines = jsonLines(t.logs());
    const incoming = lines.find(
      (l) => l.msg === 'incoming request' && (l.req as Line | undefined)?.url === '/v2/authenticate/confirm',
    );
    const ofRequest = lines.filter((l) => l.reqId === incoming!.reqId);
    expect(ofRequest.filter((l) => (l.level as number) >= 40)).toEqual([]);
    const rejected = ofRequest.filter((l) => l.error_code !== undefined);
    expect(rejected).toEqual([
      expect.objectContaining({ level: 30, msg: 'request rejected', error_code: 'AUTH_CONFIRM_FAILED', code: 2405 }),
    ]);
    const text = JSON.stringify(ofRequest);
    expect(text).not.toContain('stack');
    expect(text).not.toContain('[REDACTED]');
    expect(text).not.toContain(wrongOtp);
    // the worker: the PG's refusal is benign, at debug, never a warning with the stack
    const failed = workerLogs()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: string; message: string; meta?: Record<string, unknown> })
      .filter((l) => l.message === 'Activity failed' && l.meta?.workflowId === `verification:${receiptId}`);
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.map((l) => l.level)).toEqual(failed.map(() => 'DEBUG'));
  }, 60_000);

  it("a fault (9500) still writes the error with its stack, under the error's name, not [REDACTED]", () => {
    const out = capture();
    const logger = createLogger({ format: 'json', destination: out.stream });
    logger.error(
      { err: new ApiError('INTERNAL_ERROR', { cause: new TypeError('boom') }), body: { name: '최비밀' } },
      'request failed',
    );
    logger.error({ err: new TypeError('bad') }, 'plain');
    logger.error({ err: { name: '최비밀', message: 'not an error' } }, 'a plain object as err');
    const [line, plain, object] = jsonLines(out.text());
    expect(line).toMatchObject({
      err: { type: 'ApiError', stack: expect.stringContaining('ApiError') },
      body: { name: '[REDACTED]' },
    });
    expect(JSON.stringify(line!.err)).not.toContain('[REDACTED]');
    expect(plain).toMatchObject({ err: { type: 'TypeError', message: 'bad' } });
    expect(object).toMatchObject({ err: { name: '[REDACTED]' } });
    expect(out.text()).not.toContain('최비밀');
  });
});

describe('the workflow bundle report', () => {
  it('is logged at debug, never at info', async () => {
    const out = capture();
    const logger = createLogger({ format: 'json', destination: out.stream, level: 'debug' });
    await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: createBundlerLogger(logger), ...WORKFLOW_BUNDLER_OPTIONS });
    const lines = jsonLines(out.text());
    const report = lines.filter((l) => /compiled successfully/.test(String(l.msg)));
    expect(report).toHaveLength(1);
    expect(report[0]).toMatchObject({ level: 20, component: 'workflow-bundler' });
    expect(lines.filter((l) => (l.level as number) >= 30)).toEqual([]);
  }, 180_000);
});
