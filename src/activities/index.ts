// Every activity the worker registers, built from injected dependencies (tests inject their own).
import type { Kysely } from 'kysely';
import type { GatewayRegistry } from '../gateways/types.js';
import { createFieldCipher } from '../security/field-cipher.js';
import type { Keyring } from '../security/keyring.js';
import type { Tables } from '../store/db.js';
import { createVerificationStore } from '../store/verifications.js';
import { createVerificationActivities } from './verification.js';

export interface ActivityDeps {
  readonly db: Kysely<Tables>;
  readonly gateways: GatewayRegistry;
  readonly keyring: Keyring;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createVerificationActivities({
      gateways: deps.gateways,
      verifications: createVerificationStore(deps.db, createFieldCipher(deps.keyring)),
    }),
  };
}
