// Temporal's dynamic config, as far as this server honours it: `--dynamic-config-value KEY=JSON_VALUE` of the
// dev server's command line. Keys the engine does not know are accepted and ignored, as the launcher passes
// settings meant for a real server.

/** The dynamic config settings the engine honours, with Temporal's defaults. */
export interface DynamicConfig {
  /** `limit.historyCount.suggestContinueAsNew`: history events at which a workflow task suggests continue-as-new. */
  historyCountSuggestContinueAsNew: number;
  /** `limit.historySize.suggestContinueAsNew`: history bytes at which a workflow task suggests continue-as-new. */
  historySizeSuggestContinueAsNew: number;
  /** `limit.blobSize.error`: bytes a single payload field may have (input, result, details, failure). */
  blobSizeLimitError: number;
  /** `limit.blobSize.warn`: only payloads above this are checked against the error limit, as on Temporal. */
  blobSizeLimitWarn: number;
  /** `limit.memoSize.error`: bytes a memo may have. */
  memoSizeLimitError: number;
  /** `limit.memoSize.warn`: only memos above this are checked against the error limit. */
  memoSizeLimitWarn: number;
  /** `limit.historySize.error`: history bytes past which a running workflow is terminated. */
  historySizeLimitError: number;
  /** `limit.historyCount.error`: history events past which a running workflow is terminated. */
  historyCountLimitError: number;
  /** `limit.historySize.warn`: history bytes past which a running workflow is logged (once). */
  historySizeLimitWarn: number;
  /** `limit.historyCount.warn`: history events past which a running workflow is logged (once). */
  historyCountLimitWarn: number;
}

export const DEFAULT_DYNAMIC_CONFIG: DynamicConfig = {
  historyCountSuggestContinueAsNew: 4 * 1024,
  historySizeSuggestContinueAsNew: 4 * 1024 * 1024,
  blobSizeLimitError: 2 * 1024 * 1024,
  blobSizeLimitWarn: 512 * 1024,
  memoSizeLimitError: 2 * 1024 * 1024,
  memoSizeLimitWarn: 2 * 1024,
  historySizeLimitError: 50 * 1024 * 1024,
  historyCountLimitError: 50 * 1024,
  historySizeLimitWarn: 10 * 1024 * 1024,
  historyCountLimitWarn: 10 * 1024,
};

/** Dynamic config key -> the setting it tunes (numeric settings only, so far). */
const NUMERIC_KEYS: Record<string, keyof DynamicConfig> = {
  'limit.historyCount.suggestContinueAsNew': 'historyCountSuggestContinueAsNew',
  'limit.historySize.suggestContinueAsNew': 'historySizeSuggestContinueAsNew',
  'limit.blobSize.error': 'blobSizeLimitError',
  'limit.blobSize.warn': 'blobSizeLimitWarn',
  'limit.memoSize.error': 'memoSizeLimitError',
  'limit.memoSize.warn': 'memoSizeLimitWarn',
  'limit.historySize.error': 'historySizeLimitError',
  'limit.historyCount.error': 'historyCountLimitError',
  'limit.historySize.warn': 'historySizeLimitWarn',
  'limit.historyCount.warn': 'historyCountLimitWarn',
};

/**
 * Reads `KEY=JSON_VALUE` settings (the Temporal CLI's format; a value that is not JSON is taken as a string).
 * Throws on a known key with a value of the wrong type, as a real server refuses to start on one.
 */
export function parseDynamicConfig(values: readonly string[]): Partial<DynamicConfig> {
  const out: Partial<DynamicConfig> = {};
  for (const entry of values) {
    const eq = entry.indexOf('=');
    const key = (eq < 0 ? entry : entry.slice(0, eq)).trim();
    const setting = NUMERIC_KEYS[key];
    if (!setting) continue;
    const raw = eq < 0 ? '' : entry.slice(eq + 1).trim();
    const value = jsonOrString(raw);
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new Error(`--dynamic-config-value ${key}: expected a non-negative number, got ${JSON.stringify(raw)}`);
    }
    out[setting] = value;
  }
  return out;
}

function jsonOrString(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}
