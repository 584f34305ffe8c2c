// Shared by workflow code and test code, so it may only import @temporalio/common (workflow sandbox).
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Predefined on Temporal's dev server and the Java test server; the engine must know them too. */
export const KEYWORD_KEY = defineSearchAttributeKey('CustomKeywordField', SearchAttributeType.KEYWORD);
export const INT_KEY = defineSearchAttributeKey('CustomIntField', SearchAttributeType.INT);
