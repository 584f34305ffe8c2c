// Form fields as the pages read them: strings, trimmed; the use cases check the values themselves.
import { ApiError } from '../../platform/errors.js';

const MAX_FIELD = 2000;

export function field(body: unknown, name: string, opts: { optional: true }): string | undefined;
export function field(body: unknown, name: string, opts?: { optional?: false }): string;
export function field(body: unknown, name: string, opts: { optional?: boolean } = {}): string | undefined {
  const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined;
  const text = typeof value === 'string' ? value.trim() : '';
  if (text.length > MAX_FIELD) throw new ApiError('INVALID_REQUEST', { payloadMessage: `${name} is too long` });
  if (text === '') {
    if (opts.optional) return undefined;
    throw new ApiError('INVALID_REQUEST', { payloadMessage: `${name} is required` });
  }
  return text;
}

/** A whole number of won (or a count) typed in a form; undefined when left empty and optional. */
export function intField(body: unknown, name: string, opts: { optional: true }): number | undefined;
export function intField(body: unknown, name: string, opts?: { optional?: false }): number;
export function intField(body: unknown, name: string, opts: { optional?: boolean } = {}): number | undefined {
  const text = opts.optional ? field(body, name, { optional: true }) : field(body, name);
  if (text === undefined) return undefined;
  if (!/^\d{1,15}$/.test(text.replace(/,/g, ''))) {
    throw new ApiError('INVALID_REQUEST', { payloadMessage: `${name} must be a whole number` });
  }
  return Number(text.replace(/,/g, ''));
}
