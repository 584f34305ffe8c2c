// With no worker polling the verification task queue (a worker outage in a split deployment), the
// routes answer with a catalog error at the workflow-call deadline instead of holding requests open.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { buildServices } from '../../src/composition/index.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { expectApiError, verificationBody } from './fixtures.js';

describe('verification without a worker', () => {
  let t: TestApp;
  let project: TestProject;
  let stranded: FastifyInstance;

  beforeAll(async () => {
    t = await buildTestApp({ withTemporal: true });
    project = await t.createProject();
    // The same database, gateways and engine, but a task queue nobody polls (and services over that one).
    const deps = {
      ...t.deps,
      temporal: { client: t.temporal!.client, taskQueue: 'no-worker-polls-this-queue' },
      workflowCallTimeoutMs: 1_500,
    };
    stranded = await buildApp({ ...deps, services: buildServices(deps) });
    await stranded.ready();
  });

  afterAll(async () => {
    await stranded?.close();
    await t?.close();
  });

  const post = async (url: string, body: object) => {
    const res = await stranded.inject({ method: 'POST', url, headers: { authorization: project.basicAuth }, payload: body });
    return { status: res.statusCode, body: res.json() as Record<string, unknown> };
  };

  it('answers the request with 2401 (HTTP 500) at the deadline; the receipt stays in status 50', async () => {
    const res = await post('/v2/request/authentication', verificationBody());
    expectApiError(res, 500, 2401, 'AUTH_REQUEST_FAILED');
    const rows = await t.deps.database.db.selectFrom('verifications').select(['receipt_id', 'status']).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.status).toBe(50);
  });

  it('answers resend and confirm with 9503 at the deadline when the workflow cannot run', async () => {
    // A verification whose OTP went out before its worker disappeared.
    const row = await t.deps.database.db.selectFrom('verifications').select('receipt_id').executeTakeFirstOrThrow();
    await t.deps.database.db
      .updateTable('verifications')
      .set({ status: 51, tid: 'sid_stranded' })
      .where('receipt_id', '=', row.receipt_id)
      .execute();

    expectApiError(await post('/v2/authenticate/realarm', { receipt_id: row.receipt_id }), 503, 9503, 'SERVICE_UNAVAILABLE');
    expectApiError(
      await post('/v2/authenticate/confirm', { receipt_id: row.receipt_id, otp: '123456' }),
      503,
      9503,
      'SERVICE_UNAVAILABLE',
    );
  });
});
