// The provider circuit's states on a clock of the test's own: opening after the configured failures in a row, an
// answer (a result or a catalog refusal) closing it, one probe let through once the open period has passed, a failed
// probe opening it again, a replaced base_url starting closed, and the gauge's counts by provider host.
import { describe, expect, it } from 'vitest';
import { createProviderCircuits, providerLabel } from '../../src/upstream/circuit.js';

const BASE = 'https://api.provider.example:8443';
const failure = { class: 'unavailable' as const, message: 'upstream provider: HTTP 502 without a catalog error' };

function circuitsAt(start = 1_000_000) {
  let now = start;
  const circuits = createProviderCircuits({ failures: 3, openMs: 10_000 }, () => now);
  const advance = (ms: number): void => {
    now += ms;
  };
  return { circuits, advance };
}

describe('a provider circuit', () => {
  it('opens at the configured failures in a row; an answer in between starts the count again', () => {
    const { circuits } = circuitsAt();
    expect(circuits.failed('p1', BASE, failure)).toBe(false);
    expect(circuits.failed('p1', BASE, failure)).toBe(false);
    circuits.answered('p1', BASE);
    expect(circuits.health('p1', BASE)).toMatchObject({ state: 'closed', consecutiveFailures: 0 });
    expect(circuits.failed('p1', BASE, failure)).toBe(false);
    expect(circuits.failed('p1', BASE, failure)).toBe(false);
    expect(circuits.admit('p1', BASE)).toEqual({ admitted: true });
    expect(circuits.failed('p1', BASE, failure)).toBe(true);
    expect(circuits.admit('p1', BASE)).toEqual({ admitted: false, retryAfterMs: 10_000 });
    expect(circuits.health('p1', BASE)).toMatchObject({ state: 'open', consecutiveFailures: 3, lastError: failure });
    // another project's circuit is its own
    expect(circuits.admit('p2', BASE)).toEqual({ admitted: true });
  });

  it('half-open: one probe at a time; a failed probe opens it again, an answer closes it', () => {
    const { circuits, advance } = circuitsAt();
    for (let i = 0; i < 3; i++) circuits.failed('p1', BASE, failure);
    advance(4_000);
    expect(circuits.admit('p1', BASE)).toEqual({ admitted: false, retryAfterMs: 6_000 });
    // a call admitted before the circuit opened that fails late does not lengthen the open period
    expect(circuits.failed('p1', BASE, failure)).toBe(false);
    advance(6_000);
    expect(circuits.health('p1', BASE).state).toBe('half_open');
    // asking whether a call would go does not take the probe
    expect(circuits.blockedFor('p1')).toBeUndefined();
    expect(circuits.admit('p1', BASE)).toEqual({ admitted: true });
    expect(circuits.blockedFor('p1')).toBe(10_000);
    expect(circuits.admit('p1', BASE)).toEqual({ admitted: false, retryAfterMs: 10_000 });
    expect(circuits.failed('p1', BASE, failure)).toBe(true);
    expect(circuits.health('p1', BASE)).toMatchObject({ state: 'open' });
    advance(10_000);
    expect(circuits.admit('p1', BASE)).toEqual({ admitted: true });
    circuits.answered('p1', BASE);
    const health = circuits.health('p1', BASE);
    expect(health).toMatchObject({ state: 'closed', consecutiveFailures: 0, openUntil: undefined });
    expect(health.lastSuccessAt).toBeInstanceOf(Date);
    expect(circuits.admit('p1', BASE)).toEqual({ admitted: true });
  });

  it('a probe that never reports frees its slot after an open period', () => {
    const { circuits, advance } = circuitsAt();
    for (let i = 0; i < 3; i++) circuits.failed('p1', BASE, failure);
    advance(10_000);
    expect(circuits.admit('p1', BASE)).toEqual({ admitted: true });
    advance(10_000);
    expect(circuits.admit('p1', BASE)).toEqual({ admitted: true });
  });

  it('a replaced base_url, or a forgotten configuration, starts closed', () => {
    const { circuits } = circuitsAt();
    for (let i = 0; i < 3; i++) circuits.failed('p1', BASE, failure);
    expect(circuits.admit('p1', 'https://other.provider.example')).toEqual({ admitted: true });
    expect(circuits.health('p1', BASE).state).toBe('closed');
    for (let i = 0; i < 3; i++) circuits.failed('p2', BASE, failure);
    circuits.forget('p2');
    expect(circuits.admit('p2', BASE)).toEqual({ admitted: true });
  });

  it("counts the projects' circuits by provider host and state, never a path or a key", () => {
    const { circuits } = circuitsAt();
    circuits.answered('p1', `${BASE}/gateway`);
    circuits.answered('p2', BASE);
    for (let i = 0; i < 3; i++) circuits.failed('p3', BASE, failure);
    circuits.answered('p4', 'http://127.0.0.1:8090');
    expect(Object.fromEntries(circuits.statesByProvider())).toEqual({
      'api.provider.example:8443': { closed: 2, open: 1, half_open: 0 },
      '127.0.0.1:8090': { closed: 1, open: 0, half_open: 0 },
    });
    expect(providerLabel('https://api.provider.example/v1')).toBe('api.provider.example');
  });
});
