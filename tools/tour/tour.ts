// The tour's machinery: one HTTP call at a time against a running paygate, each printed readably (the request with
// its secrets masked, the status, the answer trimmed to what matters) and checked against what README documents.
// The first answer that differs stops the tour with what was expected and what came.
import type { WebhookReceiver } from './receiver.js';

/** One step of the tour, as README's "A short tour" shows it under `#### <n>. <title>`. */
import { bodyDifference, type ReadmeStep } from './readme.js';

export interface TourStep {
  readonly title: string;
  /**
   * The requests this step makes, `METHOD /path` with `{name}` for a path parameter, in the order of their first use
   * (a repeated request once). README's step runs the same ones (test/platform/tour-readme.test.ts), and the tour
   * stops when a step makes another request or leaves one of these out.
   */
  readonly requests: readonly string[];
  run(tour: Tour): Promise<void>;
}

/** A step's answer was not the documented one. */
export class TourFailure extends Error {
  override readonly name = 'TourFailure';
  constructor(
    readonly expected: string,
    readonly came: string,
  ) {
    super(`expected ${expected}; came ${came}`);
  }
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  /** the JSON body; a body that is not JSON as its text */
  readonly body: unknown;
}

export interface CallOptions {
  /** the values of the path's `{name}` parameters */
  readonly params?: Record<string, string>;
  readonly query?: Record<string, string>;
  readonly body?: unknown;
  /** project: the project's keys (Basic authentication); admin: ADMIN_TOKEN */
  readonly auth: 'project' | 'admin';
  readonly idempotencyKey?: string;
  /** the status README documents */
  readonly status: number;
  /** fields of the answer that must be equal to these (dotted paths: `escrow_data.status`) */
  readonly fields?: Record<string, unknown>;
  /** the fields printed (dotted paths); the whole answer, cut short, when absent */
  readonly show?: readonly string[];
  /** printed instead of the answer's JSON: a long list in a line */
  readonly summary?: (body: unknown) => string;
  /** set: nothing printed (a call repeated while waiting; the caller prints the last one) */
  readonly quiet?: boolean;
}

/** Values shown in full would hand out a credential, card data or personal data: shown cut to their start. */
const MASKED_FIELDS = new Set([
  'card_pw',
  'card_identity_no',
  'identity_no',
  'secret_key',
  'private_key',
  'webhook_secret',
  'secret',
  'otp',
  'unique',
  'di',
]);

function maskValue(key: string, value: unknown): unknown {
  if (typeof value !== 'string') return value;
  if (key === 'card_no') return value.includes('*') ? value : `${value.slice(0, 6)}******${value.slice(-4)}`;
  // the SMS text holds the OTP
  if (key === 'message') return /\d{6}/.test(value) ? value.replace(/\d{6}/g, '******') : value;
  if (!MASKED_FIELDS.has(key)) return value;
  if (key === 'otp') return '******';
  return value.length <= 4 ? '*'.repeat(value.length) : `${value.slice(0, value.startsWith('whsec_') ? 8 : 3)}…`;
}

/** A copy of a JSON value with MASKED_FIELDS cut short, for printing. */
export function masked(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return value.map((v) => masked(v, key));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, masked(v, k)]));
  }
  return maskValue(key, value);
}

/** The value at a dotted path (`escrow_data.status`, `list.0.status`). */
export function pick(value: unknown, path: string): unknown {
  let at: unknown = value;
  for (const part of path.split('.')) {
    if (typeof at !== 'object' || at === null) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

const shortJson = (value: unknown, max = 400) => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
};

/** The tour's state: what earlier steps created and later ones use. */
export interface TourState {
  applicationId?: string;
  clientKey?: string;
  secretKey?: string;
  billingKey?: string;
  receiptId?: string;
  verificationId?: string;
  messageSecret?: string;
  projectSecret?: string;
  escrowReceiptId?: string;
  reserveId?: string;
  scheduleId?: string;
  faultOrderId?: string;
}

export class Tour {
  readonly state: TourState = {};
  /** a prefix unique to this run: order ids, Idempotency-Keys and names never meet a previous run's */
  readonly run: string;
  private current: { step: TourStep; used: string[]; readme: ReadmeStep | undefined } | undefined;

  constructor(
    readonly baseUrl: URL,
    private readonly adminToken: string,
    /** README's tour, read from the checkout: each request's first body is compared with what the tour sends */
    private readonly readme: readonly ReadmeStep[],
    readonly receiver: WebhookReceiver,
    private readonly out: (line: string) => void,
  ) {
    this.run = `tour-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
  }

  /** A value of this run's own: its order ids, keys and names, its receiver's URLs (README writes its own there). */
  private isRunValue(value: unknown): boolean {
    return typeof value === 'string' && (value.includes(this.run) || value.startsWith(this.receiver.origin));
  }

  /** The receiver's URL for a destination: README's http://127.0.0.1:3000/<path>. */
  receiverUrl(path: 'message' | 'project'): string {
    return `${this.receiver.origin}/${path}`;
  }

  print(line: string): void {
    this.out(line);
  }

  /** A value an earlier step set; a tour run out of order fails here rather than sending `undefined`. */
  need<K extends keyof TourState>(key: K): NonNullable<TourState[K]> {
    const value = this.state[key];
    if (value === undefined || value === null) throw new TourFailure(`${key} from an earlier step`, 'nothing');
    return value as NonNullable<TourState[K]>;
  }

  check(ok: boolean, expected: string, came: unknown): void {
    if (!ok) throw new TourFailure(expected, typeof came === 'string' ? came : shortJson(masked(came), 1200));
  }

  /** Runs one step: its title, its calls; the requests it made must be the ones it declares. */
  async runStep(index: number, step: TourStep): Promise<void> {
    this.out('');
    this.out(`── ${index + 1}. ${step.title}`);
    this.current = { step, used: [], readme: this.readme[index] };
    await step.run(this);
    const { used } = this.current;
    this.current = undefined;
    if (used.join('\n') !== step.requests.join('\n')) {
      throw new TourFailure(`the step to make ${step.requests.join(', ') || 'no request'}`, used.join(', ') || 'no request');
    }
  }

  /** One request: printed, sent, its answer printed and checked against `options.status` and `options.fields`. */
  async call(request: string, options: CallOptions): Promise<Answer> {
    const step = this.current;
    if (!step?.step.requests.includes(request)) {
      throw new TourFailure(`a request of "${step?.step.title}" (${step?.step.requests.join(', ')})`, request);
    }
    if (!step.used.includes(request)) {
      step.used.push(request);
      // its first body is README's, but for the shell variables README splices in and this run's own ids and URLs
      const written = step.readme?.requests.find((r) => r.request === request.replace(/\{\w+\}/g, '{}'));
      if (written?.body !== undefined || options.body !== undefined) {
        const difference = bodyDifference(written?.body, options.body, (v) => this.isRunValue(v));
        if (difference !== undefined) throw new TourFailure(`README's body for ${request}`, difference);
      }
    }
    const [method, template] = request.split(' ') as [string, string];
    const path = template.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = options.params?.[name];
      if (value === undefined) throw new TourFailure(`a value for {${name}}`, 'none');
      return encodeURIComponent(value);
    });
    const url = new URL(path, this.baseUrl);
    for (const [k, v] of Object.entries(options.query ?? {})) url.searchParams.set(k, v);
    const headers: Record<string, string> = {};
    if (options.auth === 'admin') headers.authorization = `Bearer ${this.adminToken}`;
    else {
      const keys = `${this.need('clientKey')}:${this.need('secretKey')}`;
      headers.authorization = `Basic ${Buffer.from(keys).toString('base64')}`;
    }
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;

    if (!options.quiet) {
      const who = options.auth === 'admin' ? 'admin token' : 'project keys';
      const key = options.idempotencyKey ? ` · Idempotency-Key: ${options.idempotencyKey}` : '';
      this.out(`   ${method} ${url.pathname}${url.search}   (${who}${key})`);
      if (options.body !== undefined) this.out(`   ${shortJson(masked(options.body), 600)}`);
    }
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers,
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
        // the longest documented answer is a clock advance: at most 60 s
        signal: AbortSignal.timeout(90_000),
      });
    } catch (err) {
      throw new TourFailure(`an answer from ${url.origin}`, (err as Error).message);
    }
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {}
    const answer: Answer = { status: response.status, headers: response.headers, body };
    if (!options.quiet) this.printAnswer(answer, options);
    this.expectAnswer(answer, options);
    return answer;
  }

  printAnswer(answer: Answer, { show, summary }: Pick<CallOptions, 'show' | 'summary'>): void {
    const replayed = answer.headers.get('idempotent-replayed') === 'true' ? ' (idempotent-replayed: true)' : '';
    const body = masked(answer.body);
    const shown =
      summary && answer.status < 300
        ? summary(answer.body)
        : show && typeof body === 'object' && body !== null
          ? shortJson(Object.fromEntries(show.map((p) => [p, pick(body, p)]).filter(([, v]) => v !== undefined)))
          : shortJson(body);
    this.out(`   ← ${answer.status}${replayed} ${shown}`);
  }

  private expectAnswer(answer: Answer, options: CallOptions): void {
    const error = pick(answer.body, 'error_code');
    this.check(
      answer.status === options.status,
      `HTTP ${options.status}`,
      `HTTP ${answer.status}${error ? ` ${String(error)} ${String(pick(answer.body, 'code'))}` : ''}: ${shortJson(masked(answer.body), 800)}`,
    );
    for (const [path, expected] of Object.entries(options.fields ?? {})) {
      const got = pick(answer.body, path);
      this.check(
        JSON.stringify(got) === JSON.stringify(expected),
        `${path} = ${JSON.stringify(expected)}`,
        `${path} = ${JSON.stringify(masked(got, path.split('.').at(-1)))}`,
      );
    }
  }

  /**
   * Repeats a GET until `done` says its answer is the documented one (something paygate does after answering: a
   * workflow moving an order), at most `timeoutMs`; prints the call once and its last answer.
   */
  async poll(
    request: string,
    options: CallOptions,
    expectation: string,
    done: (answer: Answer) => boolean,
    timeoutMs = 30_000,
  ): Promise<Answer> {
    const until = Date.now() + timeoutMs;
    let answer = await this.call(request, options);
    let waited = false;
    while (!done(answer)) {
      if (Date.now() > until) {
        throw new TourFailure(`within ${timeoutMs / 1000} s: ${expectation}`, shortJson(masked(answer.body), 1200));
      }
      await new Promise((r) => setTimeout(r, 250));
      answer = await this.call(request, { ...options, quiet: true });
      waited = true;
    }
    if (waited) this.printAnswer(answer, options);
    return answer;
  }

  /** Waits for the receiver to take a delivery `matches` describes, signed by a secret it trusts. */
  async delivery(what: string, matches: Parameters<WebhookReceiver['waitFor']>[1], timeoutMs = 30_000): Promise<void> {
    try {
      const got = await this.receiver.waitFor(what, matches, timeoutMs);
      this.out(`   receiver: ${what}, webhook-id ${got.webhookId}, signature verified`);
    } catch (err) {
      throw new TourFailure(`${what}, signed`, (err as Error).message);
    }
  }
}
