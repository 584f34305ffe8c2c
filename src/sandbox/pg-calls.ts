// What every sandbox PG operation shares, independent of which PG serves it: fault injection (the X-Sandbox-Fault
// header or the fault board), body validation, the Idempotency-Key replay of the first answer (journaled with what
// the PG did, before the answer leaves), held answers for `timeout` / `late`, and the counters of /_sandbox/stats.
// Each PG's plugin (card-routes.ts, identity-routes.ts, escrow-routes.ts) declares its operations through `route`.
import { createHmac } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { BoundedMap } from './bounded-map.js';
import {
  type CallContext,
  type FaultBoard,
  SANDBOX_FAULTS,
  SANDBOX_OPERATIONS,
  type SandboxFault,
  type SandboxOperation,
} from './faults.js';
import { type PgOutcome, refused } from './outcome.js';
import type { JournalRecord, SandboxJournal } from './state-journal.js';

/** The PG's answer to a call the `decline` fault refuses: the card issuer said no, nothing was done. */
const DECLINED_BY_FAULT = refused('CF01', 'declined by the card issuer (sandbox fault)');

const IDEMPOTENCY_CAPACITY = 50_000;

export interface Envelope {
  readonly res_cd: string;
  readonly res_msg: string;
  readonly data?: unknown;
}
interface StoredAnswer {
  /** hash of the validated request body: a reused key must come with the same request */
  readonly fingerprint: string;
  readonly body: Envelope;
}
interface Executions {
  count: number;
  tid: string | undefined;
}

const answerRecord = (key: string, answer: StoredAnswer, executed: Executions): JournalRecord => ({
  k: 'answer',
  key,
  fp: answer.fingerprint,
  body: answer.body,
  count: executed.count,
  ...(executed.tid === undefined ? {} : { tid: executed.tid }),
});

const envelopeOf = (outcome: PgOutcome<unknown>): Envelope =>
  outcome.ok ? { res_cd: '0000', res_msg: 'approved', data: outcome.data } : { res_cd: outcome.code, res_msg: outcome.message };

/** The transaction id of an approved answer's data, when it has one. */
export const tidField = (data: unknown): string | undefined =>
  typeof data === 'object' && data !== null && 'tid' in data && typeof data.tid === 'string' ? data.tid : undefined;

export interface PgRoute<S extends z.ZodType> {
  readonly url: string;
  readonly operation: SandboxOperation;
  readonly body: S;
  readonly requireIdempotencyKey: boolean;
  readonly run: (body: z.infer<S>) => PgOutcome<unknown>;
  /** the transaction id an approved answer created, for the executions inspection */
  readonly tidOf?: (data: unknown) => string | undefined;
  /** whose call it is and for which PG, as far as the PG knows (for faults armed per merchant) */
  readonly context: (body: z.infer<S>) => CallContext;
}

export class PgCalls {
  private readonly answers = new BoundedMap<string, StoredAnswer>(IDEMPOTENCY_CAPACITY);
  private readonly executions = new BoundedMap<string, Executions>(IDEMPOTENCY_CAPACITY);
  private readonly heldAnswers = new Set<() => void>();
  private closed = false;
  readonly counters = { idempotentReplays: 0, injectedFaults: 0 };
  readonly requests = Object.fromEntries(SANDBOX_OPERATIONS.map((op) => [op, 0])) as Record<SandboxOperation, number>;

  constructor(
    private readonly deps: {
      /** keys the request fingerprints */
      readonly secret: string;
      readonly faults: FaultBoard;
      /** the journal in force (memory until the durable one is open) */
      readonly journal: () => SandboxJournal;
      /** how long a `timeout` fault holds its answer (a `late` one its request) */
      readonly faultDelayMs: number;
    },
  ) {}

  /** The fault this request takes: its header's, or the next one armed for its operation and caller. */
  nextFault(operation: SandboxOperation, req: FastifyRequest, call: CallContext): SandboxFault | undefined | 'invalid' {
    const header = req.headers['x-sandbox-fault'];
    if (header !== undefined) {
      return (SANDBOX_FAULTS as readonly string[]).includes(String(header)) ? (String(header) as SandboxFault) : 'invalid';
    }
    return this.deps.faults.take(operation, call);
  }

  private holdAnswer(): Promise<void> {
    return new Promise((resolve) => {
      const release = (): void => {
        clearTimeout(timer);
        this.heldAnswers.delete(release);
        resolve();
      };
      const timer = setTimeout(release, this.deps.faultDelayMs);
      this.heldAnswers.add(release);
    });
  }

  /** One PG operation: fault injection, body validation, idempotent replay, then the PG itself. */
  route<S extends z.ZodType>(app: FastifyInstance, route: PgRoute<S>): void {
    const { requests, counters, answers, executions, deps } = this;
    app.post(route.url, async (req: FastifyRequest, reply: FastifyReply) => {
      requests[route.operation]++;
      const parsed = route.body.safeParse(req.body);
      const fault = this.nextFault(route.operation, req, parsed.success ? route.context(parsed.data) : {});
      if (fault === 'invalid') return reply.code(400).send({ res_cd: 'E400', res_msg: 'unknown X-Sandbox-Fault value' });
      if (fault !== undefined) {
        counters.injectedFaults++;
        req.log.info({ operation: route.operation, fault }, 'sandbox fault injected');
      }
      if (fault === '500') return reply.code(500).send({ res_cd: 'E500', res_msg: 'injected gateway failure' });
      if (!parsed.success) return reply.code(400).send({ res_cd: 'E400', res_msg: 'malformed request' });
      if (fault === 'late') {
        await this.holdAnswer();
        // the PG went down before it got to the request
        if (this.closed) return reply.code(503).send({ res_cd: 'E500', res_msg: 'gateway shutting down' });
      }
      const keyHeader = req.headers['idempotency-key'];
      const key = typeof keyHeader === 'string' && keyHeader.length > 0 && keyHeader.length <= 255 ? keyHeader : undefined;
      if (key === undefined && (route.requireIdempotencyKey || keyHeader !== undefined)) {
        return reply.code(400).send({ res_cd: 'E400', res_msg: 'Idempotency-Key header missing or invalid' });
      }

      let answer: StoredAnswer;
      // keyed: a request body may hold card data, and a plain hash of it could be guessed back
      const fingerprint = createHmac('sha256', deps.secret).update(JSON.stringify(parsed.data)).digest('base64url');
      const cacheKey = key === undefined ? undefined : `${route.operation}\u0000${key}`;
      const stored = cacheKey === undefined ? undefined : answers.get(cacheKey);
      if (stored !== undefined) {
        if (stored.fingerprint !== fingerprint) {
          return reply.code(422).send({ res_cd: 'E422', res_msg: 'idempotency key reused with a different request' });
        }
        counters.idempotentReplays++;
        answer = stored;
      } else {
        // what the PG did and the answer it will replay reach the journal together, before the answer leaves
        const journal = deps.journal();
        answer = journal.batch(() => {
          const outcome = fault === 'decline' ? DECLINED_BY_FAULT : route.run(parsed.data);
          const made = { fingerprint, body: envelopeOf(outcome) };
          if (cacheKey !== undefined) {
            answers.set(cacheKey, made);
            const tid = outcome.ok ? route.tidOf?.(outcome.data) : undefined;
            const previous = executions.get(cacheKey);
            const executed = { count: (previous?.count ?? 0) + 1, tid: tid ?? previous?.tid };
            executions.set(cacheKey, executed);
            journal.write(answerRecord(cacheKey, made, executed));
          }
          return made;
        });
      }

      if (fault === 'lost_response') {
        reply.hijack();
        reply.raw.socket?.destroy();
        return reply;
      }
      if (fault === 'timeout') await this.holdAnswer();
      if (fault === 'garbage') return reply.code(200).type('application/json').send('{"res_cd": "00<html>Bad Gateway');
      return reply.code(200).send(answer.body);
    });
  }

  /** The answer first given under (operation, Idempotency-Key), if any: what a PG inquiry reports. */
  storedAnswer(operation: SandboxOperation, key: string): Envelope | undefined {
    return this.answers.get(`${operation}\u0000${key}`)?.body;
  }

  /** How many times (operation, Idempotency-Key) was really executed, and the transaction it made. */
  executed(operation: SandboxOperation, key: string): Executions | undefined {
    return this.executions.get(`${operation}\u0000${key}`);
  }

  /** A journal record of the answers' part, replayed on start. */
  restore(record: JournalRecord): void {
    const key = String(record.key);
    this.answers.set(key, { fingerprint: String(record.fp), body: record.body as Envelope });
    this.executions.set(key, { count: Number(record.count), tid: typeof record.tid === 'string' ? record.tid : undefined });
  }

  *snapshot(): Generator<JournalRecord> {
    for (const [key, executed] of this.executions.pairs()) {
      const answer = this.answers.get(key);
      if (answer !== undefined) yield answerRecord(key, answer, executed);
    }
  }

  /** Held answers are released and a `late` request still waiting does nothing. */
  close(): void {
    this.closed = true;
    for (const release of [...this.heldAnswers]) release();
  }
}
