// The provider client in production mode refuses an address literal that is not public before connecting, and says
// so without naming the address: the message reaches the merchant's error (9502) and the provider's health view.
import { afterAll, describe, expect, it } from 'vitest';
import { GatewayUnavailableError } from '../../src/gateways/types.js';
import { createProviderClient } from '../../src/upstream/index.js';

const client = createProviderClient({ policy: { sandbox: false } });
afterAll(() => client.close());

describe('the provider client in production mode', () => {
  it('refuses internal address literals (embedded IPv4 forms too) without naming them', async () => {
    for (const host of ['127.0.0.1', '10.0.0.5', '[::1]', '[::7f00:1]', '[::a9fe:a9fe]', '[::ffff:10.0.0.5]']) {
      const call = client.call(
        { baseUrl: `https://${host}:8443`, clientKey: 'key', secretKey: 'secret' },
        { method: 'GET', path: '/v2/receipt/r1' },
      );
      const err = await call.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, host).toBeInstanceOf(GatewayUnavailableError);
      const message = (err as Error).message;
      expect(message).toMatch(/refused before connecting/);
      for (const fragment of ['127.0', '10.0.0', '::1', '7f00', 'a9fe', '8443']) expect(message, host).not.toContain(fragment);
    }
  });
});
