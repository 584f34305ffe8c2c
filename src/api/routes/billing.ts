// Card key-in billing: billing key issuance, lookup and destroy; charges with a billing key.
// Raw card data lives only in the issuance handler's locals and the adapter call.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import {
  chargeHash,
  chargeIdempotencyKey,
  issuanceIdempotencyKey,
  KEY_IN_METHOD,
  KEY_IN_METHOD_SYMBOL,
  parseBillingKeyRequest,
  type ChargeParams,
  parseChargeRequest,
  parsePgAndMethod,
  renderBillingKey,
  VERIFICATION_CHARGE_WON,
  verificationOrderId,
} from '../../domain/billing.js';
import { enforceMasked } from '../../domain/card.js';
import { ApiError } from '../../domain/errors.js';
import { isResourceId, PAYMENT_PENDING } from '../../domain/receipt.js';
import { newId } from '../../domain/ids.js';
import { GatewayDeclinedError, GatewayUnavailableError, type CardBillingGateway } from '../../gateways/types.js';
import {
  billingKeyView,
  findBillingKey,
  findBillingKeyByReceipt,
  insertBillingKey,
  markBillingKeyDestroyed,
  openGatewayBillingKey,
  sealGatewayBillingKey,
  type BillingKeyRow,
} from '../../store/billing-keys.js';
import { createFieldCipher } from '../../security/field-cipher.js';
import type { Project } from '../../store/projects.js';
import { claimOrder, completeCharge, deletePendingCharge, type ReceiptRow } from '../../store/receipts.js';
import { assertOwnedBy } from '../auth.js';
import { createIdempotencyHooks } from '../idempotency.js';
import { cancelPayment, cancelRoutes } from './cancel.js';
import { receiptResponse, receiptRoutes } from './receipt.js';

/** The PG's card capability for this project: unknown / not enabled -> 2001, no billing keys -> 2057. */
function cardGatewayFor(app: FastifyInstance, project: Project, pg: string): CardBillingGateway {
  const gateway = project.pgs.includes(pg) ? app.deps.gateways.get(pg) : undefined;
  if (!gateway) throw new ApiError('RC_PG_NOT_FOUND');
  if (!gateway.card) throw new ApiError('RC_NOT_SUBSCRIBE');
  return gateway.card;
}

/** A billing key of this project that can still be used; 2309 unknown, 1225 another project's, 9423 destroyed. */
async function usableBillingKey(app: FastifyInstance, project: Project, billingKey: string): Promise<BillingKeyRow> {
  if (!isResourceId(billingKey)) throw new ApiError('SUBSCRIBE_BK_NOT_FOUND');
  const row = await findBillingKey(app.deps.database.db, billingKey);
  if (!row) throw new ApiError('SUBSCRIBE_BK_NOT_FOUND');
  assertOwnedBy(project, row.application_id);
  if (row.destroyed_at !== null) throw new ApiError('BILLING_KEY_DESTROYED');
  return row;
}

/**
 * Charges a billing key once per (project, order_id). The order_id is claimed with a pending receipt
 * before the PG is called (no transaction is held across the PG call). A pending receipt with the
 * same charge is a retry after a PG failure: it re-drives the PG under the same derived key, which
 * the PG answers without charging again.
 */
async function chargeBillingKey(
  app: FastifyInstance,
  project: Project,
  key: BillingKeyRow,
  params: ChargeParams,
  requestedAt: Date,
): Promise<ReceiptRow> {
  const gateway = cardGatewayFor(app, project, key.pg);
  const db = app.deps.database.db;
  const hash = chargeHash(params);
  const claim = await claimOrder(db, {
    receiptId: newId(),
    applicationId: project.application_id,
    orderId: params.orderId,
    orderName: params.orderName,
    billingKey: key.billing_key,
    chargeHash: hash,
    pg: key.pg,
    method: KEY_IN_METHOD,
    methodSymbol: KEY_IN_METHOD_SYMBOL,
    price: params.price,
    taxFree: params.taxFree,
    quota: params.quota,
    metadata: params.metadata,
    requestedAt,
  });
  let receiptId: string;
  if (claim.kind === 'claimed') {
    receiptId = claim.receiptId;
  } else if (claim.row.status === PAYMENT_PENDING && claim.row.charge_hash === hash) {
    receiptId = claim.row.receipt_id;
  } else {
    throw new ApiError('ORDER_ID_DUPLICATED');
  }

  try {
    const result = await gateway.charge({
      idempotencyKey: chargeIdempotencyKey(project.application_id, params.orderId),
      gatewayBillingKey: openGatewayBillingKey(createFieldCipher(app.deps.keyring), key),
      amount: params.price,
      taxFree: params.taxFree,
      orderId: params.orderId,
      orderName: params.orderName,
      quota: params.quota,
    });
    return await completeCharge(db, receiptId, result, enforceMasked(result.card.maskedNumber));
  } catch (err) {
    if (err instanceof GatewayDeclinedError) {
      await deletePendingCharge(db, receiptId);
      throw new ApiError('PAYMENT_DECLINED', { message: `The PG refused the payment: ${err.pgMessage}`, pgErrorCode: err.pgErrorCode });
    }
    if (err instanceof GatewayUnavailableError) {
      throw new ApiError('GATEWAY_UNAVAILABLE', { message: `${err.message}. Retry with the same order_id.`, cause: err });
    }
    throw err;
  }
}

/** Revokes the key at its PG, then marks it destroyed. A PG refusal (already revoked, expired) still destroys it. */
async function destroyBillingKey(app: FastifyInstance, key: BillingKeyRow, log: FastifyBaseLogger): Promise<void> {
  const gateway = app.deps.gateways.get(key.pg)?.card;
  if (gateway) {
    try {
      await gateway.destroyBillingKey({ gatewayBillingKey: openGatewayBillingKey(createFieldCipher(app.deps.keyring), key) });
    } catch (err) {
      if (err instanceof GatewayUnavailableError) {
        throw new ApiError('GATEWAY_UNAVAILABLE', { message: `${err.message}. Retry the destroy.`, cause: err });
      }
      if (!(err instanceof GatewayDeclinedError)) throw err;
      log.info({ pg_error_code: err.pgErrorCode }, 'PG refused the billing key revoke; destroying locally');
    }
  }
  await markBillingKeyDestroyed(app.deps.database.db, key.billing_key, app.deps.clock());
}

/**
 * extra.subscribe_test_payment: charges VERIFICATION_CHARGE_WON with the new key and refunds it at
 * once; returns the refunded receipt for receipt_data. When the PG refuses or cannot be reached,
 * the new key is destroyed and the issuance fails (2304 with pg_error_code / 2301).
 */
async function verifyWithTestCharge(
  app: FastifyInstance,
  project: Project,
  key: BillingKeyRow,
  orderName: string,
  log: FastifyBaseLogger,
): Promise<Record<string, unknown>> {
  let paid: ReceiptRow;
  try {
    paid = await chargeBillingKey(
      app,
      project,
      key,
      {
        billingKey: key.billing_key,
        orderName,
        orderId: verificationOrderId(key.receipt_id),
        price: VERIFICATION_CHARGE_WON,
        taxFree: 0,
        quota: 0,
        metadata: undefined,
      },
      app.deps.clock(),
    );
  } catch (err) {
    await destroyBillingKey(app, key, log).catch((destroyErr: unknown) => log.warn({ err: destroyErr }, 'could not destroy an unverified billing key'));
    if (err instanceof ApiError && err.errorCode === 'PAYMENT_DECLINED') {
      throw new ApiError('SUBSCRIBE_PUBLISH_FAILED', {
        message: `The billing key failed its verification charge: ${err.message}`,
        ...(err.pgErrorCode === undefined ? {} : { pgErrorCode: err.pgErrorCode }),
      });
    }
    if (err instanceof ApiError && err.errorCode === 'GATEWAY_UNAVAILABLE') {
      throw new ApiError('SUBSCRIBE_REQUEST_FAILED', { message: `The verification charge failed: ${err.message}`, cause: err });
    }
    throw err;
  }
  try {
    return await cancelPayment(
      app,
      project,
      { receiptId: paid.receipt_id, cancelPrice: undefined, cancelTaxFree: undefined, cancelId: 'verification', cancelMessage: 'billing key verification' },
      log,
    );
  } catch (err) {
    // The key is good; the merchant sees the verification charge still paid and can cancel it.
    log.warn({ err, receipt_id: paid.receipt_id }, 'verification charge not refunded');
    return { ...receiptResponse(paid, project) };
  }
}

export async function billingRoutes(app: FastifyInstance): Promise<void> {
  const idempotency = createIdempotencyHooks({ database: app.deps.database, clock: app.deps.clock, keyring: app.deps.keyring });
  const idempotent = { preHandler: idempotency.preHandler, onSend: idempotency.onSend };

  app.post(
    '/v2/request/subscribe',
    {
      config: { auth: 'project', scope: 'billing_key' },
      ...idempotent,
      schema: {
        summary: 'Issue a billing key from card data (key-in)',
        description:
          'Checks in order: 2300 pg missing; 2058 method missing or not 카드자동(REST); 2001 pg unknown or not enabled; ' +
          '2057 pg without billing keys; 2311-2315, 2003, 2005 blanks; 2084 month outside 01-12; 2304 (no pg_error_code) ' +
          'malformed or expired card refused locally; 2304 with pg_error_code refused by the PG; 2301 PG unreachable. ' +
          `extra.subscribe_test_payment: true charges ${VERIFICATION_CHARGE_WON} won and refunds it at once; that receipt is ` +
          'receipt_data (the only case with receipt_data).',
        tags: ['billing'],
      },
    },
    async (request) => {
      const requestedAt = app.deps.clock();
      const { pg } = parsePgAndMethod(request.body);
      const gateway = cardGatewayFor(app, request.project, pg);
      const { subscriptionId, orderName, card, verificationCharge } = parseBillingKeyRequest(request.body, requestedAt);

      const applicationId = request.project.application_id;
      const receiptId = newId();
      let issued;
      try {
        issued = await gateway.issueBillingKey({
          idempotencyKey: issuanceIdempotencyKey(applicationId, receiptId),
          card,
          orderName,
          subscriptionId,
        });
      } catch (err) {
        if (err instanceof GatewayDeclinedError) {
          throw new ApiError('SUBSCRIBE_PUBLISH_FAILED', {
            message: `The PG refused the billing key issuance: ${err.pgMessage}`,
            pgErrorCode: err.pgErrorCode,
          });
        }
        if (err instanceof GatewayUnavailableError) {
          throw new ApiError('SUBSCRIBE_REQUEST_FAILED', { message: `The billing key request failed: ${err.message}`, cause: err });
        }
        throw err;
      }

      const view = {
        billingKey: newId(),
        receiptId,
        subscriptionId,
        pg,
        card: { ...issued.card, maskedNumber: enforceMasked(issued.card.maskedNumber) },
        expiresAt: issued.expiresAt,
        publishedAt: issued.issuedAt,
        requestedAt,
      };
      const stored = await insertBillingKey(app.deps.database.db, {
        ...view,
        applicationId,
        orderName,
        sealedGatewayBillingKey: sealGatewayBillingKey(createFieldCipher(app.deps.keyring), view.billingKey, issued.gatewayBillingKey),
      });
      request.log.info({ receipt_id: receiptId, pg }, 'billing key issued');
      const response = renderBillingKey(view);
      if (verificationCharge) {
        response.receipt_data = await verifyWithTestCharge(app, request.project, stored, orderName, request.log);
      }
      return response;
    },
  );

  app.post(
    '/v2/subscribe/payment',
    {
      config: { auth: 'project', scope: 'subscribe_payment' },
      ...idempotent,
      schema: {
        summary: 'Charge a billing key',
        description:
          'order_id is unique per project (9410 ORDER_ID_DUPLICATED). The PG call carries an idempotency key derived from ' +
          '(project, order_id): after a PG failure (9502) the receipt stays pending (status 0) and retrying the same charge ' +
          'with the same order_id completes it without charging twice. ' +
          'A PG refusal is 9430 PAYMENT_DECLINED with pg_error_code.',
        tags: ['billing'],
      },
    },
    async (request) => {
      const requestedAt = app.deps.clock();
      const params = parseChargeRequest(request.body);
      const project = request.project;
      const key = await usableBillingKey(app, project, params.billingKey);

      const row = await chargeBillingKey(app, project, key, params, requestedAt);
      request.log.info({ receipt_id: row.receipt_id, pg: row.pg }, 'billing key charged');
      return receiptResponse(row, project);
    },
  );

  const lookupSchema = { summary: 'Billing key lookup', tags: ['billing'] };

  app.get<{ Params: { receipt_id: string } }>(
    '/v2/subscribe/billing_key/:receipt_id',
    { config: { auth: 'project', scope: 'billing_key' }, schema: lookupSchema },
    async (request) => {
      const receiptId = request.params.receipt_id;
      const row = isResourceId(receiptId) ? await findBillingKeyByReceipt(app.deps.database.db, receiptId) : undefined;
      if (!row) throw new ApiError('SUBSCRIBE_BK_NOT_FOUND');
      assertOwnedBy(request.project, row.application_id);
      if (row.destroyed_at !== null) throw new ApiError('BILLING_KEY_DESTROYED');
      return renderBillingKey(billingKeyView(row));
    },
  );

  app.get<{ Params: { billing_key: string } }>(
    '/v2/billing_key/:billing_key',
    { config: { auth: 'project', scope: 'billing_key' }, schema: lookupSchema },
    async (request) => renderBillingKey(billingKeyView(await usableBillingKey(app, request.project, request.params.billing_key))),
  );

  app.delete<{ Params: { billing_key: string } }>(
    '/v2/subscribe/billing_key/:billing_key',
    {
      config: { auth: 'project', scope: 'billing_key' },
      schema: {
        summary: 'Destroy a billing key',
        description: 'Revokes the key at the PG; later charges and lookups give 9423 BILLING_KEY_DESTROYED.',
        tags: ['billing'],
      },
    },
    async (request) => {
      const key = await usableBillingKey(app, request.project, request.params.billing_key);
      await destroyBillingKey(app, key, request.log);
      return { billing_key: key.billing_key };
    },
  );
}

/** The key-in billing area: billing keys and charges, receipt lookup, cancel. */
export async function billingAreaRoutes(app: FastifyInstance): Promise<void> {
  await app.register(billingRoutes);
  await app.register(receiptRoutes);
  await app.register(cancelRoutes);
}
