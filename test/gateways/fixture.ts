// Starts the real sandbox server on a random loopback port with a movable clock, plus a registry
// pointed at it, and reads the sandbox's inspection endpoints.
import { request } from 'undici';
import { createGatewayRegistry, type ClosableGatewayRegistry } from '../../src/gateways/registry.js';
import { startSandboxGateways, type SandboxGateways } from '../../src/sandbox/server.js';
import type { CardDetails } from '../../src/gateways/card-rules.js';
import type { CardBillingGateway, IdentityGateway } from '../../src/gateways/types.js';

export interface SandboxFixture {
  readonly sandbox: SandboxGateways;
  readonly registry: ClosableGatewayRegistry;
  readonly card: CardBillingGateway;
  readonly identity: IdentityGateway;
  /** moves the sandbox's clock forward */
  advance(ms: number): void;
  getJson(path: string): Promise<{ status: number; body: unknown }>;
  postJson(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; text: string }>;
  close(): Promise<void>;
}

export async function startSandboxFixture(
  opts: { timeoutMs?: number; secret?: string; faultDelayMs?: number } = {},
): Promise<SandboxFixture> {
  let offsetMs = 0;
  const sandbox = await startSandboxGateways({
    clock: () => new Date(Date.now() + offsetMs),
    ...(opts.secret === undefined ? {} : { secret: opts.secret }),
    faultDelayMs: opts.faultDelayMs ?? 10_000,
  });
  const registry = createGatewayRegistry({ sandboxUrl: sandbox.url, timeoutMs: opts.timeoutMs ?? 5_000 });
  const card = registry.get('sandbox_card')?.card;
  const identity = registry.get('sandbox_identity')?.identity;
  if (card === undefined || identity === undefined) throw new Error('sandbox gateways missing from the registry');
  return {
    sandbox,
    registry,
    card,
    identity,
    advance(ms) {
      offsetMs += ms;
    },
    async getJson(path) {
      const res = await request(new URL(path, sandbox.url), {
        headers: { authorization: `Bearer ${sandbox.token}` },
        headersTimeout: 5_000,
        bodyTimeout: 5_000,
      });
      return { status: res.statusCode, body: await res.body.json() };
    },
    async postJson(path, body, headers = {}) {
      const res = await request(new URL(path, sandbox.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${sandbox.token}`, ...headers },
        body: JSON.stringify(body),
        headersTimeout: 5_000,
        bodyTimeout: 5_000,
      });
      return { status: res.statusCode, text: await res.body.text() };
    },
    async close() {
      await registry.close();
      await sandbox.close();
    },
  };
}

/** A Luhn-valid card far in the future unless overridden. */
export function testCard(overrides: Partial<CardDetails> = {}): CardDetails {
  return {
    number: '4111111111111111',
    password2: '12',
    identityNo: '900101',
    expireYear: '39',
    expireMonth: '12',
    ...overrides,
  };
}

/** Appends the Luhn check digit to `partial`. */
export function withLuhnDigit(partial: string): string {
  for (let d = 0; d <= 9; d++) {
    const candidate = `${partial}${d}`;
    let sum = 0;
    for (let i = 0; i < candidate.length; i++) {
      let v = Number(candidate[candidate.length - 1 - i]);
      if (i % 2 === 1) {
        v *= 2;
        if (v > 9) v -= 9;
      }
      sum += v;
    }
    if (sum % 10 === 0) return candidate;
  }
  throw new Error('unreachable: one digit always completes a Luhn sum');
}
