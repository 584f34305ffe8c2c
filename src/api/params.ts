// Path parameters shared by route files.
import { z } from 'zod';

/** `:application_id` of the admin API: a project id, 24 hexadecimal characters. */
export const applicationIdParams = z.object({ application_id: z.string().regex(/^[0-9a-f]{24}$/) });
