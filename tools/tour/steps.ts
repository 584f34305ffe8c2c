// The tour's steps: README's "A short tour", one for one and in its order (test/platform/tour-readme.test.ts holds
// the two together). Each sends what README's step sends, with this run's own order ids and Idempotency-Keys so the
// tour runs again on the same server, and checks what README says comes back.
import type { ReceivedDelivery } from './receiver.js';
import type { TourStep } from './tour.js';

const PHONE = '01012345678';
/** 31 days: one advance of the sandbox clock moves a monthly schedule past its next period */
const MONTH_SECONDS = 31 * 24 * 3600;

/** The `list` of a list answer's body. */
const list = (body: unknown): Record<string, unknown>[] => {
  const value = (body as { list?: unknown } | undefined)?.list;
  return Array.isArray(value) ? (value as Record<string, unknown>[]) : [];
};
const isWebhookSecret = (value: unknown) => typeof value === 'string' && /^whsec_[A-Za-z0-9+/=]+$/.test(value);
const projectEvent =
  (webhookType: string, test: (body: Record<string, unknown>) => boolean = () => true) =>
  (d: ReceivedDelivery) =>
    d.path === '/project' && d.body?.webhook_type === webhookType && test(d.body);
/** A delivery list in a line: each record's event, status and the HTTP status of its attempts. */
const deliveries = (body: unknown) => {
  const records = list(body);
  const each = records.map((d) => {
    const answers = (d.attempts as { http_status?: number }[]).map((a) => a.http_status ?? 'no answer').join(' ');
    return `${String(d.event)} ${String(d.status)} (${answers})`;
  });
  return `count ${String((body as { count?: unknown }).count)}: ${each.join('; ')}`;
};
const escrowStatus = (body: Record<string, unknown>) => (body.escrow_data as { status?: unknown } | undefined)?.status;

export const TOUR_STEPS: readonly TourStep[] = [
  {
    title: 'Create a project',
    requests: ['POST /admin/v1/projects'],
    async run(tour) {
      const { body } = await tour.call('POST /admin/v1/projects', {
        auth: 'admin',
        body: { name: `my shop (${tour.run})` },
        status: 201,
        show: ['application_id', 'client_key', 'secret_key', 'private_key', 'pgs'],
      });
      const project = body as Record<string, string>;
      tour.check(typeof project.secret_key === 'string', 'the project with its secret_key (shown once)', body);
      tour.state.applicationId = project.application_id;
      tour.state.clientKey = project.client_key;
      tour.state.secretKey = project.secret_key;
    },
  },
  {
    title: 'Issue a billing key',
    requests: ['POST /v2/request/subscribe'],
    async run(tour) {
      const { body } = await tour.call('POST /v2/request/subscribe', {
        auth: 'project',
        body: {
          pg: 'sandbox_card',
          method: '카드자동(REST)',
          subscription_id: `${tour.run}-sub`,
          order_name: '월 구독',
          card_no: '4111111111111111',
          card_pw: '12',
          card_identity_no: '900101',
          // README's values: the sandbox's evergreen test card stays valid however far tours move the sandbox clock
          card_expire_year: '31',
          card_expire_month: '12',
        },
        status: 200,
        fields: { status: 11, 'billing_data.card_no': '411111******1111' },
        show: ['billing_key', 'billing_data.card_no', 'billing_data.card_company', 'status', 'status_locale'],
      });
      tour.state.billingKey = (body as { billing_key: string }).billing_key;
    },
  },
  {
    title: 'Charge the billing key',
    requests: ['POST /v2/subscribe/payment'],
    async run(tour) {
      const orderId = `${tour.run}-order-1`;
      const { body } = await tour.call('POST /v2/subscribe/payment', {
        auth: 'project',
        idempotencyKey: orderId,
        body: { billing_key: tour.need('billingKey'), order_name: '11월 구독료', order_id: orderId, price: 9900 },
        status: 200,
        fields: { status: 1, status_locale: '결제완료', order_id: orderId, price: 9900 },
        show: ['receipt_id', 'order_id', 'price', 'status', 'status_locale', 'card_data.card_no'],
      });
      tour.state.receiptId = (body as { receipt_id: string }).receipt_id;
    },
  },
  {
    title: 'Replay the charge with the same Idempotency-Key',
    requests: ['POST /v2/subscribe/payment'],
    async run(tour) {
      const orderId = `${tour.run}-order-1`;
      const replay = await tour.call('POST /v2/subscribe/payment', {
        auth: 'project',
        idempotencyKey: orderId,
        body: { billing_key: tour.need('billingKey'), order_name: '11월 구독료', order_id: orderId, price: 9900 },
        status: 200,
        fields: { receipt_id: tour.need('receiptId'), status: 1 },
        show: ['receipt_id', 'order_id', 'status'],
      });
      const replayed = replay.headers.get('idempotent-replayed');
      tour.check(replayed === 'true', 'the header idempotent-replayed: true', `idempotent-replayed: ${replayed}`);
    },
  },
  {
    title: 'Cancel part of the payment',
    requests: ['POST /v2/cancel', 'GET /v2/receipt/{receipt_id}'],
    async run(tour) {
      const receiptId = tour.need('receiptId');
      await tour.call('POST /v2/cancel', {
        auth: 'project',
        body: { receipt_id: receiptId, cancel_price: 1000, cancel_id: `${tour.run}-refund-1` },
        status: 200,
        fields: { status: 1, cancelled_price: 1000 },
        show: ['receipt_id', 'status', 'price', 'cancelled_price', 'cancelled_at'],
      });
      await tour.call('GET /v2/receipt/{receipt_id}', {
        auth: 'project',
        params: { receipt_id: receiptId },
        status: 200,
        fields: { status: 1, price: 9900, cancelled_price: 1000 },
        show: ['receipt_id', 'status', 'status_locale', 'price', 'cancelled_price'],
      });
    },
  },
  {
    title: 'Request an identity verification',
    requests: ['POST /v2/request/authentication'],
    async run(tour) {
      const { body } = await tour.call('POST /v2/request/authentication', {
        auth: 'project',
        body: {
          pg: 'sandbox_identity',
          method: '본인인증',
          order_name: '회원가입',
          authentication_id: `${tour.run}-signup`,
          username: '홍길동',
          identity_no: '9001011',
          phone: PHONE,
          carrier: 'SKT',
        },
        status: 200,
        fields: { status: 51, 'authenticate_data.number_of_realarms': 0 },
        show: ['receipt_id', 'status', 'authenticate_data'],
      });
      tour.state.verificationId = (body as { receipt_id: string }).receipt_id;
    },
  },
  {
    title: 'Resend the OTP',
    requests: ['POST /v2/authenticate/realarm'],
    async run(tour) {
      await tour.call('POST /v2/authenticate/realarm', {
        auth: 'project',
        body: { receipt_id: tour.need('verificationId') },
        status: 200,
        fields: { status: 51, 'authenticate_data.number_of_realarms': 1 },
        show: ['receipt_id', 'status', 'authenticate_data.number_of_realarms'],
      });
    },
  },
  {
    title: "Confirm with the sandbox inbox's newest OTP",
    requests: ['GET /sandbox/v1/sms', 'POST /v2/authenticate/confirm'],
    async run(tour) {
      const inbox = await tour.call('GET /sandbox/v1/sms', {
        auth: 'project',
        query: { phone: PHONE },
        status: 200,
        summary: (body) =>
          `${list(body).length} SMS, newest first: ${list(body)
            .map((m) => `otp ****** sent ${String(m.sent_at)}`)
            .join('; ')}`,
      });
      const messages = list(inbox.body);
      // two SMS, newest first: the request's and the resend's; only the newest OTP confirms
      tour.check(
        messages.length === 2 && String(messages[0]!.sent_at) >= String(messages[1]!.sent_at),
        'two SMS in the inbox, newest first',
        inbox.body,
      );
      await tour.call('POST /v2/authenticate/confirm', {
        auth: 'project',
        body: { receipt_id: tour.need('verificationId'), otp: messages[0]!.otp },
        status: 200,
        fields: { status: 12, status_locale: '본인인증완료' },
        show: ['receipt_id', 'status', 'status_locale', 'authenticated_at', 'authenticate_data'],
      });
    },
  },
  {
    title: 'Look up the verification result',
    requests: ['GET /v2/certificate/{receipt_id}'],
    async run(tour) {
      await tour.call('GET /v2/certificate/{receipt_id}', {
        auth: 'project',
        params: { receipt_id: tour.need('verificationId') },
        status: 200,
        fields: { status: 12, 'authenticate_data.name': '홍길동', 'authenticate_data.birth': '19900101' },
        show: [
          'receipt_id',
          'status',
          'authenticated_at',
          'authenticate_data.name',
          'authenticate_data.birth',
          'authenticate_data.unique',
        ],
      });
    },
  },
  {
    title: 'Subscribe the message webhook',
    requests: ['PUT /message/alimtalk/webhook', 'POST /message/alimtalk/webhook/secret'],
    async run(tour) {
      const url = tour.receiverUrl('message');
      await tour.call('PUT /message/alimtalk/webhook', {
        auth: 'project',
        body: { url, events: [301, 302], retry_count: 10 },
        status: 200,
        fields: { configured: true, url, events: [301, 302], enabled: true },
        show: ['configured', 'url', 'events', 'enabled', 'secret'],
      });
      const { body } = await tour.call('POST /message/alimtalk/webhook/secret', {
        auth: 'project',
        status: 200,
        show: ['url', 'secret'],
      });
      const secret = (body as { secret?: unknown }).secret;
      tour.check(isWebhookSecret(secret), 'the whole new secret, whsec_...', body);
      tour.state.messageSecret = secret as string;
    },
  },
  {
    title: "Set the project's webhook_url and merchant fields",
    requests: ['PATCH /admin/v1/projects/{application_id}'],
    async run(tour) {
      const url = tour.receiverUrl('project');
      const merchant = { company_name: 'My Shop', addr1: 'Seoul, Jung-gu', addr2: '1F', zipcode: '04524', phone: '0212345678' };
      const { body } = await tour.call('PATCH /admin/v1/projects/{application_id}', {
        auth: 'admin',
        params: { application_id: tour.need('applicationId') },
        body: { webhook_url: url, merchant },
        status: 200,
        fields: { webhook_url: url, 'merchant.company_name': 'My Shop' },
        show: ['application_id', 'webhook_url', 'merchant', 'webhook_secret'],
      });
      const secret = (body as { webhook_secret?: unknown }).webhook_secret;
      tour.check(isWebhookSecret(secret), "the webhook_url's signing secret (its first URL shows it once)", body);
      tour.state.projectSecret = secret as string;
    },
  },
  {
    title: 'Start a webhook receiver',
    requests: [],
    async run(tour) {
      // bound before the run (its address had to be known by the two steps above); from here it trusts the secrets
      tour.receiver.trust(tour.need('messageSecret'));
      tour.receiver.trust(tour.need('projectSecret'));
      tour.print(`   receiver on ${tour.receiver.origin}: /message and /project, each delivery's signature checked`);
    },
  },
  {
    title: 'Send a test message webhook',
    requests: ['POST /message/alimtalk/webhook/test'],
    async run(tour) {
      await tour.call('POST /message/alimtalk/webhook/test', {
        auth: 'project',
        status: 200,
        fields: { queued: true, url: tour.receiverUrl('message') },
        show: ['delivery_id', 'url', 'queued'],
      });
      await tour.delivery(
        'the test event alimtalk.send.succeeded 301 at /message',
        (d) => d.path === '/message' && d.body?.event_code === 301 && JSON.stringify(d.body.tags) === '["test"]',
      );
    },
  },
  {
    title: 'Send a sandbox message',
    requests: ['POST /sandbox/v1/messages'],
    async run(tour) {
      const refId = `${tour.run}-message`;
      const { body } = await tour.call('POST /sandbox/v1/messages', {
        auth: 'project',
        idempotencyKey: refId,
        body: { phone: PHONE, template_code: 'WELCOME', ref_id: refId, outcome: 'failed' },
        status: 200,
        fields: { outcome: 'failed', 'events.0.event_code': 300, 'events.0.delivery_id': null, 'events.1.event_code': 302 },
        show: ['receipt_id', 'ref_id', 'outcome', 'events'],
      });
      // 300 is not subscribed (events [301, 302]): only 302 is sent
      const events = (body as { events: { delivery_id: unknown }[] }).events;
      tour.check(events.length === 2 && typeof events[1]!.delivery_id === 'string', 'a delivery for 302 only', body);
      await tour.delivery(
        'alimtalk.send.failed 302 at /message',
        (d) => d.path === '/message' && d.body?.event_code === 302 && d.body.ref_id === refId,
      );
    },
  },
  {
    title: "List the message webhook's deliveries",
    requests: ['GET /message/alimtalk/webhook/deliveries'],
    async run(tour) {
      // an attempt is recorded after the receiver answered: wait for the two records to say so
      await tour.poll(
        'GET /message/alimtalk/webhook/deliveries',
        { auth: 'project', query: { page: '1', limit: '20' }, status: 200, summary: deliveries },
        'count 2, both done after one attempt answered 200',
        (answer) =>
          (answer.body as { count?: unknown }).count === 2 &&
          list(answer.body).every(
            (d) => d.status === 'done' && (d.attempts as { http_status?: number }[])?.[0]?.http_status === 200,
          ),
      );
    },
  },
  {
    title: 'Pay into escrow',
    requests: ['POST /sandbox/v1/payments'],
    async run(tour) {
      const orderId = `${tour.run}-escrow`;
      const { body } = await tour.call('POST /sandbox/v1/payments', {
        auth: 'project',
        idempotencyKey: orderId,
        body: {
          pg: 'sandbox_escrow_a',
          price: 10000,
          order_id: orderId,
          order_name: 'Shoes',
          escrow: true,
          user: { username: 'Hong', phone: PHONE, address: 'Busan', zipcode: '48000' },
        },
        status: 200,
        fields: { status: 1, 'escrow_data.status': 0, 'escrow_data.status_locale': '에스크로대기' },
        show: ['receipt_id', 'order_id', 'status', 'escrow_data'],
      });
      tour.state.escrowReceiptId = (body as { receipt_id: string }).receipt_id;
    },
  },
  {
    title: 'Start shipping',
    requests: ['PUT /v2/escrow/shipping/start/{receipt_id}'],
    async run(tour) {
      await tour.call('PUT /v2/escrow/shipping/start/{receipt_id}', {
        auth: 'project',
        params: { receipt_id: tour.need('escrowReceiptId') },
        body: { tracking_number: '1234567890', delivery_corp: 'CJ대한통운' },
        status: 200,
        fields: { 'escrow_data.status': 3 },
        show: ['receipt_id', 'escrow_data'],
      });
      await tour.delivery(
        'ESCROW_STATUS_CHANGED (escrow_data.status 3) at /project',
        projectEvent('ESCROW_STATUS_CHANGED', (body) => escrowStatus(body) === 3),
      );
    },
  },
  {
    title: 'Confirm the purchase as the buyer',
    requests: ['POST /sandbox/v1/escrow/{receipt_id}/events'],
    async run(tour) {
      await tour.call('POST /sandbox/v1/escrow/{receipt_id}/events', {
        auth: 'project',
        params: { receipt_id: tour.need('escrowReceiptId') },
        idempotencyKey: `${tour.run}-buyer`,
        body: { event: 'purchase_confirmed' },
        status: 202,
        fields: { sent: true },
      });
      await tour.delivery(
        'ESCROW_STATUS_CHANGED (escrow_data.status 1) at /project',
        projectEvent('ESCROW_STATUS_CHANGED', (body) => escrowStatus(body) === 1),
      );
    },
  },
  {
    title: "Read the order's history and the project's notifications",
    requests: ['GET /v2/escrow/{receipt_id}/events', 'GET /admin/v1/projects/{application_id}/webhook/deliveries'],
    async run(tour) {
      const { body } = await tour.call('GET /v2/escrow/{receipt_id}/events', {
        auth: 'project',
        params: { receipt_id: tour.need('escrowReceiptId') },
        status: 200,
        summary: (events) =>
          list(events)
            .map((e) => `${String(e.event)} ${String(e.from_status)}→${String(e.to_status)} (${String(e.source)})`)
            .join('; '),
      });
      const transitions = list(body)
        .filter((e) => e.applied === true)
        .map((e) => `${String(e.from_status)}→${String(e.to_status)}`);
      tour.check(transitions.join(' ') === '0→3 3→1', 'the transitions 0→3 (shipping start) then 3→1 (confirmed)', body);
      await tour.poll(
        'GET /admin/v1/projects/{application_id}/webhook/deliveries',
        {
          auth: 'admin',
          params: { application_id: tour.need('applicationId') },
          query: { page: '1', limit: '20' },
          status: 200,
          summary: deliveries,
        },
        'two escrow.status_changed deliveries, both done',
        (answer) =>
          list(answer.body).filter(
            (d) => d.event === 'escrow.status_changed' && d.status === 'done' && d.destination === 'project',
          ).length === 2,
      );
    },
  },
  {
    title: 'Reserve a charge for tomorrow',
    requests: ['GET /sandbox/v1/clock', 'POST /v2/subscribe/payment/reserve'],
    async run(tour) {
      const { body: clock } = await tour.call('GET /sandbox/v1/clock', { auth: 'project', status: 200 });
      const now = Date.parse(String((clock as { now?: unknown }).now));
      tour.check(!Number.isNaN(now), 'the sandbox clock {now}', clock);
      const orderId = `${tour.run}-reserve`;
      const { body } = await tour.call('POST /v2/subscribe/payment/reserve', {
        auth: 'project',
        idempotencyKey: orderId,
        body: {
          billing_key: tour.need('billingKey'),
          order_id: orderId,
          order_name: 'Annual plan',
          price: 120000,
          reserve_execute_at: new Date(now + 86_400_000).toISOString(),
        },
        status: 200,
        show: ['reserve_id', 'reserve_execute_at'],
      });
      const reserveId = (body as { reserve_id?: unknown }).reserve_id;
      tour.check(typeof reserveId === 'string', 'a reserve_id', body);
      tour.state.reserveId = reserveId as string;
    },
  },
  {
    title: 'Create a monthly subscription',
    requests: ['POST /v2/subscribe/schedules'],
    async run(tour) {
      const { body } = await tour.call('POST /v2/subscribe/schedules', {
        auth: 'project',
        idempotencyKey: `${tour.run}-schedule`,
        body: { billing_key: tour.need('billingKey'), order_name: 'Pro plan', price: 9900, interval: 'month', max_charges: 12 },
        status: 201,
        fields: { status: 'active', interval: 'month', max_charges: 12 },
        show: ['schedule_id', 'status', 'interval', 'max_charges', 'next_charge_at'],
      });
      tour.state.scheduleId = (body as { schedule_id: string }).schedule_id;
    },
  },
  {
    title: 'A year in one minute',
    requests: ['POST /sandbox/v1/clock/advance'],
    async run(tour) {
      for (let month = 1; month <= 12; month += 1) {
        await tour.call('POST /sandbox/v1/clock/advance', {
          auth: 'admin',
          body: { seconds: MONTH_SECONDS },
          status: 200,
          fields: { settled: true },
          quiet: month > 1,
        });
        if (month > 1) tour.print(`   (advance ${month} of 12) ← 200 settled`);
      }
    },
  },
  {
    title: "See the year's charges and the reserve",
    requests: [
      'GET /v2/subscribe/schedules/{schedule_id}/charges',
      'GET /v2/subscribe/schedules/{schedule_id}',
      'GET /v2/subscribe/payment/reserve/{reserve_id}',
    ],
    async run(tour) {
      const params = { schedule_id: tour.need('scheduleId') };
      await tour.poll(
        'GET /v2/subscribe/schedules/{schedule_id}/charges',
        {
          auth: 'project',
          params,
          status: 200,
          summary: (body) =>
            list(body)
              .map((c) => `${String(c.period)} ${String(c.status)}`)
              .join(', '),
        },
        '12 periods, all paid',
        (answer) => list(answer.body).length === 12 && list(answer.body).every((c) => c.status === 'paid'),
      );
      await tour.call('GET /v2/subscribe/schedules/{schedule_id}', {
        auth: 'project',
        params,
        status: 200,
        fields: { status: 'completed', charges_made: 12 },
        show: ['schedule_id', 'status', 'charges_made'],
      });
      await tour.delivery('SUBSCRIPTION_COMPLETED at /project', projectEvent('SUBSCRIPTION_COMPLETED'));
      await tour.call('GET /v2/subscribe/payment/reserve/{reserve_id}', {
        auth: 'project',
        params: { reserve_id: tour.need('reserveId') },
        status: 200,
        fields: { status: 'paid' },
        show: ['reserve_id', 'status', 'reserve_execute_at', 'receipt_id'],
      });
    },
  },
  {
    title: 'Arm a sandbox fault',
    requests: ['POST /sandbox/v1/faults'],
    async run(tour) {
      await tour.call('POST /sandbox/v1/faults', {
        auth: 'project',
        idempotencyKey: `${tour.run}-fault`,
        body: { pg: 'sandbox_card', operation: 'charge', fault: 'error', count: 1 },
        status: 201,
        fields: { pg: 'sandbox_card', operation: 'charge', fault: 'error', remaining: 1 },
        show: ['fault_id', 'pg', 'operation', 'fault', 'remaining'],
      });
    },
  },
  {
    title: 'Charge through the fault',
    requests: ['POST /v2/subscribe/payment'],
    async run(tour) {
      tour.state.faultOrderId = `${tour.run}-order-2`;
      await tour.call('POST /v2/subscribe/payment', {
        auth: 'project',
        body: { billing_key: tour.need('billingKey'), order_name: '12월 구독료', order_id: tour.state.faultOrderId, price: 9900 },
        status: 502,
        fields: { error_code: 'GATEWAY_UNAVAILABLE', code: 9502 },
        show: ['error_code', 'code', 'message', 'receipt_id'],
      });
    },
  },
  {
    title: 'Retry the charge with the same order_id',
    requests: ['POST /v2/subscribe/payment'],
    async run(tour) {
      const orderId = tour.need('faultOrderId');
      await tour.call('POST /v2/subscribe/payment', {
        auth: 'project',
        body: { billing_key: tour.need('billingKey'), order_name: '12월 구독료', order_id: orderId, price: 9900 },
        status: 200,
        fields: { status: 1, order_id: orderId },
        show: ['receipt_id', 'order_id', 'status', 'status_locale'],
      });
    },
  },
];
