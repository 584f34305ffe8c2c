// The OpenAPI document describes each request body and query once, where it is checked: the documentation is
// derived from the validators (src/platform/validation.ts: documented(), describeFields()), or is the very zod
// schema the route validates with. Here: the derivation itself (an undocumented or twice-documented field
// refuses to load), every documented body and query of the routes' contracts (each area's http.ts) is such a
// derivation, and the parsers the routes run read no field of the body or query that its documentation leaves out.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { routeDocs } from '../../src/api/docs/openapi.js';
import { parseAdvance } from '../../src/api/routes/sandbox-clock.js';
import { parsePgRequestsQuery, parseSandboxBuyerEvent, parseSandboxPayment, parseShippingStart } from '../../src/escrow/rules.js';
import { parseFault } from '../../src/gateways/sandbox-faults.js';
import { parseBillingKeyRequest, parseChargeRequest, parsePgAndMethod } from '../../src/payments/billing-rules.js';
import { parseCancelRequest } from '../../src/payments/receipt-rules.js';
import {
  describeFields,
  describeOneOf,
  documented,
  fails,
  fields,
  isDerivedDoc,
  isRecord,
  validate,
} from '../../src/platform/validation.js';
import { tokenRequestSchema } from '../../src/projects/access-tokens.js';
import { keyRotationSchema, projectCreateSchema, projectPatchSchema } from '../../src/projects/service.js';
import type { Project } from '../../src/projects/store.js';
import { parseReserveRequest } from '../../src/reserves/rules.js';
import {
  notifiedReceiptId,
  parseUpstreamConfig,
  providerNotificationBody,
  upstreamConfigBody,
} from '../../src/upstream/rules.js';
import {
  parseScheduleListQuery,
  parseSchedulePatch,
  parseScheduleRequest,
  parseUpcomingCount,
} from '../../src/schedules/rules.js';
import {
  parseOtp,
  parseReceiptIdBody,
  parseSandboxInboxQuery,
  parseVerificationPg,
  parseVerificationRequest,
} from '../../src/verification/rules.js';
import {
  parseFeedbackTarget,
  parsePageQuery,
  parseProjectDeliveryQuery,
  parseReplaySince,
  parseSandboxMessage,
  parseWebhookConfigChange,
} from '../../src/webhooks/rules.js';

/** The documented properties of a documentation schema, nested ones as `parent.child`. */
function documentedProperties(schema: z.ZodType): Set<string> {
  const out = new Set<string>();
  const walk = (json: Record<string, unknown>, prefix: string) => {
    for (const option of (json.anyOf ?? json.oneOf ?? []) as Record<string, unknown>[]) walk(option, prefix);
    for (const [key, inner] of Object.entries((json.properties ?? {}) as Record<string, Record<string, unknown>>)) {
      out.add(`${prefix}${key}`);
      walk(inner, `${prefix}${key}.`);
    }
  };
  walk(z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>, '');
  return out;
}

/**
 * `value` seen through a proxy that notes every field a parser reads (nested objects too). The copies an object
 * spread, Object.entries or JSON.stringify make are not reads: they list the keys, ask for each one's descriptor,
 * then get it. Nor is JSON.stringify's look for toJSON.
 */
function recorded(value: unknown, reads: Set<string>, prefix = ''): unknown {
  if (!isRecord(value)) return value;
  const listed = new Set<string | symbol>();
  return new Proxy(value, {
    ownKeys(target) {
      listed.clear();
      return Reflect.ownKeys(target);
    },
    getOwnPropertyDescriptor(target, key) {
      listed.add(key);
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
    get(target, key, receiver) {
      const copied = listed.delete(key);
      if (typeof key !== 'string' || key === 'toJSON') return Reflect.get(target, key, receiver);
      if (!copied) reads.add(`${prefix}${key}`);
      return recorded(Reflect.get(target, key, receiver), reads, `${prefix}${key}.`);
    },
  });
}

// Times the documented examples are valid at: reserve_execute_at is two days later, start_at is now.
const now = new Date('2026-11-25T00:00:00Z');
const sandboxProject = { pgs: ['sandbox_card'] } as unknown as Project;

/** What each route runs on its body or query (the route and its service, in order), by 'METHOD /path body|query'. */
const PARSERS: Record<string, (input: unknown) => unknown> = {
  'POST /v2/request/token body': (b) => validate(tokenRequestSchema, b),
  'POST /admin/v1/projects body': (b) => validate(projectCreateSchema, b),
  'PATCH /admin/v1/projects/:application_id body': (b) => validate(projectPatchSchema, b),
  'POST /admin/v1/projects/:application_id/keys/rotate body': (b) => validate(keyRotationSchema, b),
  'GET /admin/v1/projects/:application_id/webhook/deliveries query': parseProjectDeliveryQuery,
  'POST /v2/request/subscribe body': (b) => [parsePgAndMethod(b), parseBillingKeyRequest(b, now)],
  'POST /v2/subscribe/payment body': (b) => [parseChargeRequest(b), parseFeedbackTarget(b, { sandbox: true })],
  'POST /v2/cancel body': parseCancelRequest,
  'POST /v2/request/authentication body': (b) => [parseVerificationPg(b), parseVerificationRequest(b, 'sandbox_identity')],
  'POST /v2/authenticate/realarm body': parseReceiptIdBody,
  'POST /v2/authenticate/confirm body': (b) => [parseReceiptIdBody(b), parseOtp(b, 'sms'), parseOtp(b, 'pass')],
  'PUT /v2/escrow/shipping/start/:receipt_id body': parseShippingStart,
  'POST /v2/subscribe/payment/reserve body': (b) => [parseReserveRequest(b, now), parseFeedbackTarget(b, { sandbox: true })],
  'POST /v2/subscribe/schedules body': (b) => parseScheduleRequest(b, now),
  'GET /v2/subscribe/schedules query': parseScheduleListQuery,
  'GET /v2/subscribe/schedules/:schedule_id/upcoming query': parseUpcomingCount,
  'PATCH /v2/subscribe/schedules/:schedule_id body': parseSchedulePatch,
  'PUT /message/alimtalk/webhook body': parseWebhookConfigChange,
  'GET /message/alimtalk/webhook/deliveries query': parsePageQuery,
  'POST /message/alimtalk/webhook/deliveries/retry body': parseReplaySince,
  'POST /sandbox/v1/messages body': parseSandboxMessage,
  'GET /sandbox/v1/sms query': parseSandboxInboxQuery,
  'POST /sandbox/v1/payments body': parseSandboxPayment,
  'POST /sandbox/v1/escrow/:receipt_id/events body': parseSandboxBuyerEvent,
  'GET /sandbox/v1/pg-requests query': parsePgRequestsQuery,
  'POST /sandbox/v1/faults body': (b) => parseFault(sandboxProject, b),
  'POST /sandbox/v1/clock/advance body': (b) => parseAdvance(b, now),
  'PUT /admin/v1/projects/:application_id/upstream body': (b) => parseUpstreamConfig(b, { sandbox: true }),
  'POST /upstream/v1/notifications/:application_id body': notifiedReceiptId,
};

/** Documented bodies that no paygate check reads, and why. */
const NOT_CHECKED: Record<string, string> = {
  'POST /pg/v1/escrow/notifications/:pg body': "the PG's own signed text, verified over its exact bytes by the PG's adapter",
};

/** The routes that validate with a plain zod schema, which is then their documentation as it is. */
const PLAIN_VALIDATORS = new Set<z.ZodType>([
  tokenRequestSchema,
  projectCreateSchema,
  projectPatchSchema,
  keyRotationSchema,
  upstreamConfigBody,
  providerNotificationBody,
]);

const documentedInputs = Object.entries(routeDocs).flatMap(([route, doc]) => [
  ...(doc.body ? [{ name: `${route} body`, schema: doc.body, example: doc.example.request }] : []),
  ...(doc.querystring ? [{ name: `${route} query`, schema: doc.querystring as z.ZodType, example: undefined }] : []),
]);

describe('describeFields', () => {
  const name = documented(
    z.string().max(10).describe('a name'),
    z.custom<string>((v) => typeof v === 'string'),
  );
  const size = documented(z.number().int().optional(), z.unknown());

  it('derives an object of the fields the stages read, in the order they first read them, each as documented', () => {
    const doc = describeFields([fields({ name }), fields({ name: z.string().max(10), size })]);
    expect(isDerivedDoc(doc)).toBe(true);
    expect(z.toJSONSchema(doc, { io: 'input' })).toEqual({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        name: { type: 'string', maxLength: 10, description: 'a name' },
        size: { type: 'integer', maximum: 9007199254740991, minimum: -9007199254740991 },
      },
      required: ['name'],
      additionalProperties: {},
    });
    expect(z.toJSONSchema(describeFields([fields({ name })], { strict: true }), { io: 'input' }).additionalProperties).toBe(
      false,
    );
  });

  it('reads through refined, transformed and piped stages, and plain z.object validators', () => {
    const refined = fields({ name }).refine(() => true, fails('INVALID_REQUEST'));
    const transformed = fields({ size }).transform((body) => body);
    const piped = z.custom<unknown>(isRecord).pipe(z.object({ other: documented(z.boolean(), z.boolean()) }));
    expect(Object.keys(describeFields([refined, transformed, piped]).shape)).toEqual(['name', 'size', 'other']);
  });

  it('refuses a field a stage checks without documentation, or documents twice', () => {
    expect(() => describeFields([fields({ name, extra: z.string() })])).toThrow(/no documentation for extra/);
    const again = documented(z.string(), z.string());
    expect(() => describeFields([fields({ name }), fields({ name: again })])).toThrow(/name is documented twice/);
    expect(() => describeFields([z.string()])).toThrow(/a stage without fields/);
  });

  it('describes a body of exactly one field as one strict object per field', () => {
    const doc = describeOneOf([fields({ name, size })]);
    expect(isDerivedDoc(doc)).toBe(true);
    expect(doc.options.map((option) => Object.keys(option.shape))).toEqual([['name'], ['size']]);
    expect(isDerivedDoc(z.object({ name: z.string() }))).toBe(false);
  });
});

describe('the documented request bodies and queries', () => {
  it('are each derived from the checks, or the very zod schema the route validates with', () => {
    expect(documentedInputs.length).toBeGreaterThan(25);
    const written = documentedInputs
      .filter(({ name, schema }) => !isDerivedDoc(schema) && !PLAIN_VALIDATORS.has(schema) && !(name in NOT_CHECKED))
      .map(({ name }) => name);
    // derive it with describeFields() from the stages that check it, or document the validator itself
    expect(written).toEqual([]);
  });

  it('each have the parser the route runs listed here, and nothing else is listed', () => {
    const names = documentedInputs.map(({ name }) => name).filter((name) => !(name in NOT_CHECKED));
    expect(Object.keys(PARSERS).sort()).toEqual(names.sort());
  });

  it.each(documentedInputs.filter(({ name }) => !(name in NOT_CHECKED)))(
    '$name: the parsers read no field the documentation leaves out',
    ({ name, schema, example }) => {
      const reads = readsOf(PARSERS[name]!, schema, example, MORE_INPUT[name]);
      expect(reads.size, name).toBeGreaterThan(0);
      expect(undocumented(reads, schema), name).toEqual([]);
    },
  );

  it('would catch a parser reading a field its documentation leaves out (and not count copies as reads)', () => {
    const doc = routeDocs['POST /sandbox/v1/payments']!;
    const reads = readsOf(
      (body) => {
        const copy = { ...(body as Record<string, unknown>) };
        JSON.stringify(body);
        parseSandboxPayment(copy);
        return (body as Record<string, unknown>).coupon;
      },
      doc.body!,
      { ...(doc.example.request as object), note: 'copied, never read' },
    );
    expect(undocumented(reads, doc.body!)).toEqual(['coupon']);
  });
});

/** What the examples lack: the queries' required fields, and the fields read only when another is given. */
const MORE_INPUT: Record<string, Record<string, unknown>> = {
  'GET /sandbox/v1/sms query': { phone: '01091234567' },
  'GET /sandbox/v1/pg-requests query': { receipt_id: '6747e3a1c0ffee0000000009' },
  'POST /v2/subscribe/payment body': { feedback_url: 'https://shop.example.com/paid', content_type: 'application/json' },
  'POST /v2/subscribe/payment/reserve body': { feedback_url: 'https://shop.example.com/paid' },
};

/** The fields `parser` reads of the documented example (every documented object present, so its fields are read too). */
function readsOf(parser: (input: unknown) => unknown, schema: z.ZodType, example: unknown, more?: object): Set<string> {
  const input: Record<string, unknown> = { ...(example as Record<string, unknown> | undefined), ...more };
  for (const property of documentedProperties(schema)) {
    const [parent] = property.split('.');
    if (property.includes('.') && input[parent!] === undefined) input[parent!] = {};
  }
  const reads = new Set<string>();
  parser(recorded(input, reads));
  return reads;
}

const undocumented = (reads: Set<string>, schema: z.ZodType) => {
  const names = documentedProperties(schema);
  return [...reads].filter((read) => !names.has(read));
};
