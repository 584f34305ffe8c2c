// The circuit of each project's upstream provider: after `failures` calls in a row that got no answer (network,
// timeout, a 5xx without a catalog body, an unparsable answer: GatewayUnavailableError), the provider is taken for
// down for `openMs`: calls are answered at once with 9481 and a Retry-After, nothing is sent. Once the open period
// has passed, one call is let through (half-open, the probe): an answer closes the circuit, a failure opens it again
// for another period. Any answer of the provider counts as one, its catalog refusals included: it is up.
//
// Per process, in memory: each API and worker process learns a provider's outage from its own calls (a few calls
// each, at most `failures`), and forgets it at a restart. One circuit per project's configuration (its
// application_id and base_url): a replaced base_url starts closed. Times are the host's real time, never the sandbox
// clock: an outage lasts real seconds.

/** The circuit's settings (UPSTREAM_CIRCUIT_FAILURES, UPSTREAM_CIRCUIT_OPEN_SECONDS). */
export interface CircuitSettings {
  /** failed calls in a row that open the circuit */
  readonly failures: number;
  /** how long it stays open before a probe is let through */
  readonly openMs: number;
}

export const DEFAULT_CIRCUIT_SETTINGS: CircuitSettings = { failures: 5, openMs: 30_000 };

export type CircuitState = 'closed' | 'open' | 'half_open';

/** A failed call's class: no answer in time, or no usable answer. */
export type ProviderFailureClass = 'unavailable' | 'timeout';

export interface ProviderHealth {
  readonly state: CircuitState;
  /** open: when the next call is let through as a probe */
  readonly openUntil: Date | undefined;
  readonly consecutiveFailures: number;
  readonly lastSuccessAt: Date | undefined;
  readonly lastError: { readonly at: Date; readonly class: ProviderFailureClass; readonly message: string } | undefined;
}

/** Whether a call may go to the provider; when not, in how many ms it may. */
export type Admission = { readonly admitted: true } | { readonly admitted: false; readonly retryAfterMs: number };

interface Circuit {
  baseUrl: string;
  failures: number;
  /** set while open or half-open: the end of the open period */
  openUntil: number | undefined;
  /** half-open: a probe is out until then (a probe that never reports frees the slot after an open period) */
  probeUntil: number | undefined;
  lastSuccessAt: number | undefined;
  lastError: { at: number; class: ProviderFailureClass; message: string } | undefined;
}

/** The provider's host as a metric label: host[:port] of its base_url (never a path, a key or a credential). */
export function providerLabel(baseUrl: string): string {
  try {
    return new URL(baseUrl).host;
  } catch {
    return 'invalid';
  }
}

export interface ProviderCircuits {
  /** Asks to send one call; a half-open circuit lets one through (the probe) and holds the others. */
  admit(applicationId: string, baseUrl: string): Admission;
  /**
   * Whether a call would be let through now, without taking the probe: undefined, or the ms until it may. By the
   * project's circuit as this process last saw it (a base_url replaced in another process counts from its next call).
   */
  blockedFor(applicationId: string): number | undefined;
  /** The provider answered (a result or a catalog error): closed. */
  answered(applicationId: string, baseUrl: string): void;
  /** The call got no answer; returns true when this failure opened the circuit. */
  failed(applicationId: string, baseUrl: string, failure: { class: ProviderFailureClass; message: string }): boolean;
  health(applicationId: string, baseUrl: string): ProviderHealth;
  /** A configuration replaced or removed: its circuit starts again closed. */
  forget(applicationId: string): void;
  /** How many projects' circuits are in each state, by provider label (the circuit gauge). */
  statesByProvider(): Map<string, Record<CircuitState, number>>;
}

export function createProviderCircuits(settings: CircuitSettings, now: () => number = Date.now): ProviderCircuits {
  const circuits = new Map<string, Circuit>();

  const circuitOf = (applicationId: string, baseUrl: string): Circuit => {
    let circuit = circuits.get(applicationId);
    if (circuit === undefined || circuit.baseUrl !== baseUrl) {
      circuit = {
        baseUrl,
        failures: 0,
        openUntil: undefined,
        probeUntil: undefined,
        lastSuccessAt: undefined,
        lastError: undefined,
      };
      circuits.set(applicationId, circuit);
    }
    return circuit;
  };
  const stateOf = (circuit: Circuit, at: number): CircuitState => {
    if (circuit.openUntil === undefined) return 'closed';
    return at < circuit.openUntil ? 'open' : 'half_open';
  };
  /** ms until a call may go, or undefined when one may now */
  const waitOf = (circuit: Circuit, at: number): number | undefined => {
    const state = stateOf(circuit, at);
    if (state === 'closed') return undefined;
    if (state === 'open') return (circuit.openUntil as number) - at;
    if (circuit.probeUntil !== undefined && at < circuit.probeUntil) return circuit.probeUntil - at;
    return undefined;
  };

  return {
    admit(applicationId, baseUrl) {
      const circuit = circuitOf(applicationId, baseUrl);
      const at = now();
      const wait = waitOf(circuit, at);
      if (wait !== undefined) return { admitted: false, retryAfterMs: wait };
      if (stateOf(circuit, at) === 'half_open') circuit.probeUntil = at + settings.openMs;
      return { admitted: true };
    },

    blockedFor(applicationId) {
      const circuit = circuits.get(applicationId);
      return circuit === undefined ? undefined : waitOf(circuit, now());
    },

    answered(applicationId, baseUrl) {
      const circuit = circuitOf(applicationId, baseUrl);
      circuit.failures = 0;
      circuit.openUntil = undefined;
      circuit.probeUntil = undefined;
      circuit.lastSuccessAt = now();
    },

    failed(applicationId, baseUrl, failure) {
      const circuit = circuitOf(applicationId, baseUrl);
      const at = now();
      circuit.lastError = { at, class: failure.class, message: failure.message };
      circuit.failures += 1;
      const state = stateOf(circuit, at);
      // a call let through before the circuit opened that fails late does not lengthen the open period
      if (state === 'open') return false;
      if (state === 'half_open' || circuit.failures >= settings.failures) {
        circuit.openUntil = at + settings.openMs;
        circuit.probeUntil = undefined;
        return true;
      }
      return false;
    },

    health(applicationId, baseUrl) {
      const circuit = circuits.get(applicationId);
      if (circuit === undefined || circuit.baseUrl !== baseUrl) {
        return { state: 'closed', openUntil: undefined, consecutiveFailures: 0, lastSuccessAt: undefined, lastError: undefined };
      }
      const state = stateOf(circuit, now());
      return {
        state,
        openUntil: state === 'open' && circuit.openUntil !== undefined ? new Date(circuit.openUntil) : undefined,
        consecutiveFailures: circuit.failures,
        lastSuccessAt: circuit.lastSuccessAt === undefined ? undefined : new Date(circuit.lastSuccessAt),
        lastError:
          circuit.lastError === undefined
            ? undefined
            : { at: new Date(circuit.lastError.at), class: circuit.lastError.class, message: circuit.lastError.message },
      };
    },

    forget(applicationId) {
      circuits.delete(applicationId);
    },

    statesByProvider() {
      const at = now();
      const counts = new Map<string, Record<CircuitState, number>>();
      for (const circuit of circuits.values()) {
        const label = providerLabel(circuit.baseUrl);
        let row = counts.get(label);
        if (row === undefined) {
          row = { closed: 0, open: 0, half_open: 0 };
          counts.set(label, row);
        }
        row[stateOf(circuit, at)] += 1;
      }
      return counts;
    },
  };
}
