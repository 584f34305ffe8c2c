// Every activity the worker registers, from one factory with injected dependencies. The worker,
// `npm start` and the test helpers all register exactly this set.
import type { GatewayRegistry } from '../gateways/types.js';
import type { Stores } from '../store/index.js';
import { createVerificationActivities } from './verification.js';

export interface ActivityDeps {
  readonly stores: Pick<Stores, 'verifications'>;
  readonly gateways: GatewayRegistry;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createVerificationActivities({ gateways: deps.gateways, verifications: deps.stores.verifications }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
