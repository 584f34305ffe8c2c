// Adapter (connector + transformer) for the sandbox identity PG: translates the IdentityGateway
// contract to the sandbox's wire format (see sandbox/server.ts) and back.
import { z } from 'zod';
import type { GatewayHttpClient } from './http-client.js';
import type { Carrier, VerifiedPerson } from './rules.js';
import type { IdentityGateway, OtpRequest } from './types.js';

/** The sandbox's telco codes -> paygate carrier codes. */
const CARRIER_BY_TELCO = {
  SKT: 'SKT',
  KTF: 'KT',
  LGU: 'LGT',
  SKM: 'SKT_MVNO',
  KTM: 'KT_MVNO',
  LGM: 'LGT_MVNO',
} as const satisfies Record<string, Carrier>;
type Telco = keyof typeof CARRIER_BY_TELCO;
const TELCO_BY_CARRIER: Readonly<Record<Carrier, Telco>> = {
  SKT: 'SKT',
  KT: 'KTF',
  LGT: 'LGU',
  SKT_MVNO: 'SKM',
  KT_MVNO: 'KTM',
  LGT_MVNO: 'LGM',
};

const requestData = z.object({ tid: z.string().min(1) });
const emptyData = z.object({}).optional();
const confirmData = z.object({
  user_name: z.string().min(1),
  phone_no: z.string().min(1),
  birthday: z.string().regex(/^\d{8}$/),
  sex: z.enum(['M', 'F']),
  foreigner: z.enum(['0', '1']),
  telco: z.enum(Object.keys(CARRIER_BY_TELCO) as [Telco, ...Telco[]]),
  ci: z.string().min(1),
  di: z.string().min(1),
});

export function createSandboxIdentityGateway(http: GatewayHttpClient): IdentityGateway {
  return {
    async requestOtp(req: OtpRequest) {
      const data = await http.call({
        method: 'POST',
        path: '/auth/v1/requests',
        idempotencyKey: req.idempotencyKey,
        body: {
          merchant_id: req.merchantId,
          user_name: req.person.name,
          phone_no: req.person.phone,
          birth_sex: req.person.identityNo,
          telco: TELCO_BY_CARRIER[req.person.carrier],
          method: req.type === 'pass' ? 'PASS' : 'SMS',
          client_ip: req.clientIp,
          ...(req.siteUrl === undefined ? {} : { site_url: req.siteUrl }),
        },
        data: requestData,
      });
      return { tid: data.tid };
    },

    async resendOtp(req) {
      await http.call({
        method: 'POST',
        path: '/auth/v1/resends',
        idempotencyKey: req.idempotencyKey,
        body: { tid: req.tid },
        data: emptyData,
      });
    },

    async confirmOtp(req): Promise<VerifiedPerson> {
      const data = await http.call({
        method: 'POST',
        path: '/auth/v1/confirms',
        body: { tid: req.tid, otp: req.otp },
        data: confirmData,
      });
      return {
        name: data.user_name,
        phone: data.phone_no,
        birth: data.birthday,
        gender: data.sex === 'M' ? 1 : 0,
        foreigner: data.foreigner,
        carrier: CARRIER_BY_TELCO[data.telco],
        ci: data.ci,
        di: data.di,
      };
    },
  };
}
