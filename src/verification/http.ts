// The HTTP contract of the identity verification routes (payment-api.md): request, resend, confirm, the
// certificate, and the sandbox's SMS inbox. The request bodies and the query are the validators' own documentation
// (./rules.ts), never written here.
import { z } from 'zod';
import { PG_CALL_ERRORS } from '../gateways/index.js';
import {
  byId,
  component,
  EX,
  IDEMPOTENCY_ERRORS,
  metadata,
  type RouteContracts,
  resourceId,
  timestamp,
} from '../platform/http-contract.js';
import { confirmRequestBody, receiptIdRequestBody, sandboxInboxQueryDoc, verificationRequestBody } from './rules.js';

const verificationBase = {
  receipt_id: resourceId,
  authentication_id: z.string(),
  metadata,
  pg: z.string(),
  method: z.string(),
  method_symbol: z.string(),
  method_origin: z.string(),
  method_origin_symbol: z.string(),
  requested_at: timestamp,
};

const VerificationRequested = component(
  'VerificationRequested',
  z.object({
    ...verificationBase,
    status: z.number().int().describe('51 awaiting the OTP'),
    authenticate_data: z.object({ tid: z.string(), number_of_realarms: z.number().int() }),
  }),
);

const VerificationResult = component(
  'VerificationResult',
  z.object({
    ...verificationBase,
    gateway_url: z.string(),
    status: z.number().int().describe('12 verified'),
    status_locale: z.string(),
    authenticated_at: timestamp,
    authenticate_data: z.object({
      name: z.string(),
      phone: z.string(),
      birth: z.string().describe('YYYYMMDD'),
      gender: z.number().int().describe('1 male, 0 female'),
      foreigner: z.string().describe('"0" Korean, "1" foreigner'),
      carrier: z.string(),
      unique: z.string().describe('CI'),
      di: z.string(),
      tid: z.string(),
    }),
  }),
);

const exampleBase = {
  receipt_id: EX.verificationId,
  authentication_id: 'auth-1',
  metadata: {},
  pg: 'sandbox_identity',
  method: 'auth',
  method_symbol: 'auth',
  method_origin: '본인인증',
  method_origin_symbol: 'auth',
  requested_at: EX.now,
};
const verificationRequestedExample = {
  ...exampleBase,
  status: 51,
  authenticate_data: { tid: 'sid_7f1c7c29831c1f6b017652dc', number_of_realarms: 0 },
};
const verificationResultExample = {
  ...exampleBase,
  gateway_url: 'https://pay.example.com',
  status: 12,
  status_locale: '본인인증완료',
  authenticated_at: EX.now,
  authenticate_data: {
    name: '홍길동',
    phone: '01091234567',
    birth: '19900101',
    gender: 1,
    foreigner: '0',
    carrier: 'SKT',
    unique: 'F+EKj3TrctN/M1JXwggmPqZq3okmGriL3S34X3eUH7CBsZJuLzuMQAwwMCVBmS+cj9uV78us2GHUUm6mWNoPHQ==',
    di: '/P4hQIPnpbatxCXSYOJd8WiAZESrSHKO+3osNFaU7IL35zZ1uS1lbwxlK7uj5Nw107h1TgezlKgzZSnwb2i9pw==',
    tid: 'sid_7f1c7c29831c1f6b017652dc',
  },
};

/** What the request and resend routes' documents say of paygate's send caps (./send-limit-rules.ts). */
const SEND_CAPS =
  "Every SMS / push sent, requests and resends alike, counts towards paygate's caps per phone number (default 6 in " +
  '10 minutes and 10 in 24 hours) and per project (default 1,000 an hour); past one, 9479 VERIFICATION_SEND_LIMIT ' +
  '(HTTP 429) names the limit, with Retry-After in seconds, and nothing is sent, stored or counted.';

export const verificationHttp: RouteContracts = {
  'POST /v2/request/authentication': {
    operationId: 'requestVerification',
    tag: 'verification',
    summary: 'Request an identity verification (SMS OTP or pass push)',
    description:
      'Starts the verification workflow and answers once the gateway has sent the SMS / push: status 51 with authenticate_data.tid and number_of_realarms 0. ' +
      SEND_CAPS,
    body: verificationRequestBody,
    response: { status: 200, description: 'The verification, awaiting the OTP (status 51)', schema: VerificationRequested },
    example: {
      request: {
        pg: 'sandbox_identity',
        method: '본인인증',
        order_name: 'Sign-up',
        authentication_id: 'auth-1',
        username: '홍길동',
        identity_no: '9001011',
        phone: '01091234567',
        carrier: 'SKT',
      },
      response: verificationRequestedExample,
    },
    errors: [
      'AUTH_NEED_PG_METHOD',
      'RC_PG_NOT_FOUND',
      'AUTH_CONFIRM_METHOD_NOT_FOUND',
      'RC_NAME_BLANK',
      'RC_O_ID_BLANK',
      'AUTH_CONFIRM_READY_FAILED',
      'AUTH_REQUEST_FAILED',
      'RC_PM_NOT_FOUND',
      'VERIFICATION_SEND_LIMIT',
      'INVALID_REQUEST',
      ...IDEMPOTENCY_ERRORS,
      'SERVICE_UNAVAILABLE',
      // a relayed request: the provider is down, refuses the project's keys, or names a verification the project has
      'UPSTREAM_UNAVAILABLE',
      'UPSTREAM_KEYS_REFUSED',
      'UPSTREAM_ID_REUSED',
    ],
  },
  'POST /v2/authenticate/realarm': {
    operationId: 'resendVerificationOtp',
    tag: 'verification',
    summary: 'Resend the SMS OTP',
    description:
      'number_of_realarms grows before the gateway answers, so it also counts a failed resend (2411, or 9502 / 9504 with the receipt_id when the gateway could not be reached; 9481 while an upstream provider is down counts nothing). Only for SMS verifications (2412). ' +
      SEND_CAPS,
    body: receiptIdRequestBody,
    response: { status: 200, description: 'The verification, number_of_realarms counted', schema: VerificationRequested },
    example: {
      request: { receipt_id: EX.verificationId },
      response: {
        ...verificationRequestedExample,
        authenticate_data: { tid: 'sid_7f1c7c29831c1f6b017652dc', number_of_realarms: 1 },
      },
    },
    // a blank receipt_id is 2000 (the body's check), an unknown one 2407
    errors: [
      'RC_NOT_FOUND',
      'AUTH_NOT_FOUND',
      'RC_NOT_AUTH',
      'APP_KEY_CHAIN_SESSION_INVALID',
      'AUTH_NOT_READY',
      'AUTH_REALARM_NOT_ABLE',
      'AUTH_REALARM_FAILED',
      'VERIFICATION_SEND_LIMIT',
      ...IDEMPOTENCY_ERRORS,
      ...PG_CALL_ERRORS,
    ],
  },
  'POST /v2/authenticate/confirm': {
    operationId: 'confirmVerification',
    tag: 'verification',
    summary: 'Confirm the OTP',
    description:
      'Within 30 minutes of the request. A wrong OTP gives 2405 (HTTP 500); a verification not awaiting an OTP (verified, expired, failed) gives 2404. ' +
      'An identity gateway that cannot be reached gives 9502 (HTTP 502) or 9504 (HTTP 504, no answer in time) with the receipt_id, 9481 (HTTP 503) while an upstream provider is down: confirm again with the same OTP.',
    body: confirmRequestBody,
    response: { status: 200, description: 'The verified person (status 12)', schema: VerificationResult },
    example: { request: { receipt_id: EX.verificationId, otp: '940642' }, response: verificationResultExample },
    errors: [
      'RC_NOT_FOUND',
      'AUTH_NOT_FOUND',
      'RC_NOT_AUTH',
      'APP_KEY_CHAIN_SESSION_INVALID',
      'AUTH_NOT_READY',
      'AUTH_CONFIRM_FAILED',
      ...IDEMPOTENCY_ERRORS,
      ...PG_CALL_ERRORS,
    ],
  },
  'GET /v2/certificate/:receipt_id': {
    operationId: 'getVerificationCertificate',
    tag: 'verification',
    summary: 'Look up a verification result',
    description: 'Only within 30 minutes after authenticated_at (2409 afterwards); 2408 before confirmation.',
    params: byId('receipt_id'),
    response: { status: 200, description: 'The verified person', schema: VerificationResult },
    example: { response: verificationResultExample },
    // the lookup names an unknown receipt 2000, as the receipt lookups do (ownVerification's `unknown`)
    errors: ['RC_NOT_FOUND', 'RC_NOT_AUTH', 'APP_KEY_CHAIN_SESSION_INVALID', 'AUTH_NOT_CONFIRMED', 'AUTH_EXPIRED'],
  },

  // ---- sandbox helpers (sandbox mode only)
  'GET /sandbox/v1/sms': {
    operationId: 'listSandboxSms',
    tag: 'sandbox',
    summary: 'Sandbox SMS inbox',
    description: 'Messages the sandbox identity gateway sent to a phone, newest first. Sandbox mode only.',
    querystring: sandboxInboxQueryDoc,
    response: {
      status: 200,
      description: 'The SMS the sandbox identity gateway sent to the phone, newest first',
      schema: z.object({
        list: z.array(z.object({ phone: z.string(), message: z.string(), otp: z.string(), sent_at: timestamp })),
      }),
    },
    example: {
      response: {
        list: [
          {
            phone: '01091234567',
            message: '[paygate sandbox] Your verification code is 940642. It expires in 30 minutes.',
            otp: '940642',
            sent_at: EX.now,
          },
        ],
      },
    },
    errors: ['INVALID_REQUEST', 'GATEWAY_UNAVAILABLE'],
  },
};
