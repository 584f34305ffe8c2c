// The slice of temporal.api.operatorservice.v1.OperatorService that concerns this server: search attributes.
import type { Engine } from './engine.js';
import { enums, type temporal } from './proto.js';

const TYPES: Record<string, number> = {
  Text: enums.IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  Keyword: enums.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Int: enums.IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Double: enums.IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  Bool: enums.IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  Datetime: enums.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KeywordList: enums.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

const SYSTEM: Record<string, number> = {
  WorkflowId: TYPES.Keyword!,
  RunId: TYPES.Keyword!,
  WorkflowType: TYPES.Keyword!,
  ExecutionStatus: TYPES.Keyword!,
  TaskQueue: TYPES.Keyword!,
  StartTime: TYPES.Datetime!,
  CloseTime: TYPES.Datetime!,
  ExecutionTime: TYPES.Datetime!,
  HistoryLength: TYPES.Int!,
  BuildIds: TYPES.KeywordList!,
};

export class OperatorService {
  constructor(private readonly engine: Engine) {}

  async ListSearchAttributes(): Promise<object> {
    const custom: Record<string, number> = {};
    for (const [k, v] of this.engine.searchAttributeTypes()) custom[k] = TYPES[v] ?? TYPES.Keyword!;
    return { customAttributes: custom, systemAttributes: SYSTEM, storageSchema: {} };
  }

  async AddSearchAttributes(r: temporal.api.operatorservice.v1.IAddSearchAttributesRequest): Promise<object> {
    const names = Object.fromEntries(Object.entries(TYPES).map(([k, v]) => [v, k]));
    const add: Record<string, string> = {};
    for (const [k, v] of Object.entries(r.searchAttributes ?? {})) add[k] = names[v] ?? 'Keyword';
    await this.engine.addSearchAttributes(add);
    return {};
  }
}

export class HealthService {
  async Check(): Promise<object> {
    return { status: 1 };
  }
}
