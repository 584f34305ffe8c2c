// A small parser for Temporal's visibility query language (the SQL-like `WorkflowId = 'x' AND StartTime > '...'`),
// evaluated in memory against each execution's visibility record.

/** Search attribute payloads are JSON (json/plain); anything else has no comparable value. */
export function payloadValue(p: { data?: Uint8Array | null }): unknown {
  try {
    return JSON.parse(Buffer.from(p.data ?? []).toString('utf8'));
  } catch {
    return undefined;
  }
}

export type VisibilityValue = string | number | boolean | null | Array<string | number | boolean>;
export type VisibilityRecord = Record<string, VisibilityValue | undefined>;
export type Predicate = (rec: VisibilityRecord) => boolean;

export class QueryParseError extends Error {}

type Token = { kind: 'ident' | 'string' | 'number' | 'op' | 'lparen' | 'rparen' | 'comma'; text: string };

const KEYWORDS = new Set([
  'AND',
  'OR',
  'NOT',
  'IN',
  'BETWEEN',
  'ORDER',
  'GROUP',
  'BY',
  'ASC',
  'DESC',
  'STARTS_WITH',
  'IS',
  'NULL',
]);

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      let text = '';
      while (j < src.length && src[j] !== c) {
        if (src[j] === '\\' && j + 1 < src.length) j++;
        text += src[j];
        j++;
      }
      if (j >= src.length) throw new QueryParseError('unterminated string literal');
      out.push({ kind: 'string', text });
      i = j + 1;
    } else if (c === '`') {
      const j = src.indexOf('`', i + 1);
      if (j < 0) throw new QueryParseError('unterminated identifier');
      out.push({ kind: 'ident', text: src.slice(i + 1, j) });
      i = j + 1;
    } else if (c === '(') {
      out.push({ kind: 'lparen', text: c });
      i++;
    } else if (c === ')') {
      out.push({ kind: 'rparen', text: c });
      i++;
    } else if (c === ',') {
      out.push({ kind: 'comma', text: c });
      i++;
    } else if ('=!<>'.includes(c)) {
      const two = src.slice(i, i + 2);
      if (['!=', '<=', '>=', '<>'].includes(two)) {
        out.push({ kind: 'op', text: two === '<>' ? '!=' : two });
        i += 2;
      } else if (c === '!') {
        throw new QueryParseError(`unexpected '!' at ${i}`);
      } else {
        out.push({ kind: 'op', text: c });
        i++;
      }
    } else if (/[0-9-]/.test(c)) {
      const m = /^-?\d+(\.\d+)?/.exec(src.slice(i));
      if (!m) throw new QueryParseError(`unexpected '${c}' at ${i}`);
      out.push({ kind: 'number', text: m[0] });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_.]*/.exec(src.slice(i))!;
      out.push({ kind: 'ident', text: m[0] });
      i += m[0].length;
    } else {
      throw new QueryParseError(`unexpected '${c}' at ${i}`);
    }
  }
  return out;
}

const TIME_FIELDS = new Set(['StartTime', 'CloseTime', 'ExecutionTime']);

function literal(field: string, tok: Token | undefined): string | number | boolean {
  if (!tok) throw new QueryParseError('expected a value');
  if (tok.kind === 'number') return Number(tok.text);
  if (tok.kind === 'string') {
    if (TIME_FIELDS.has(field)) {
      const ms = Date.parse(tok.text);
      if (Number.isNaN(ms)) throw new QueryParseError(`invalid time '${tok.text}' for ${field}`);
      return ms;
    }
    return tok.text;
  }
  if (tok.kind === 'ident' && (tok.text === 'true' || tok.text === 'false')) return tok.text === 'true';
  throw new QueryParseError(`expected a value, got '${tok.text}'`);
}

function compare(a: VisibilityValue | undefined, op: string, b: string | number | boolean): boolean {
  if (a === undefined || a === null) return op === '!=';
  if (Array.isArray(a)) {
    const has = a.some((x) => x === b);
    return op === '=' ? has : op === '!=' ? !has : false;
  }
  switch (op) {
    case '=':
      return a === b;
    case '!=':
      return a !== b;
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
    default:
      return false;
  }
}

/** Parses a visibility query into a predicate; an empty query matches everything. */
export function parseVisibilityQuery(query: string, knownFields: (name: string) => boolean): Predicate {
  const { predicate, groupBy } = parseCountQuery(query, knownFields);
  if (groupBy !== undefined) throw new QueryParseError("'GROUP BY' clause is only supported in count query");
  return predicate;
}

/**
 * A count query: the filter, and the field of a trailing `GROUP BY` — Temporal groups counts by
 * `ExecutionStatus` only.
 */
export function parseCountQuery(
  query: string,
  knownFields: (name: string) => boolean,
): { predicate: Predicate; groupBy?: string } {
  const toks = tokenize(query);
  const isGroupKw = (t: Token | undefined, kw: string) => !!t && t.kind === 'ident' && t.text.toUpperCase() === kw;
  const groupAt = toks.findIndex((t, i) => isGroupKw(t, 'GROUP') && isGroupKw(toks[i + 1], 'BY'));
  if (groupAt < 0) return { predicate: parsePredicate(toks, knownFields) };
  const field = toks[groupAt + 2];
  if (field?.kind !== 'ident' || groupAt + 3 !== toks.length) throw new QueryParseError("invalid 'GROUP BY' clause");
  if (field.text !== 'ExecutionStatus') {
    throw new QueryParseError("'GROUP BY' clause is only supported for ExecutionStatus search attribute");
  }
  return { predicate: parsePredicate(toks.slice(0, groupAt), knownFields), groupBy: field.text };
}

function parsePredicate(toks: Token[], knownFields: (name: string) => boolean): Predicate {
  let pos = 0;
  const peek = () => toks[pos];
  const isKw = (t: Token | undefined, kw: string) => !!t && t.kind === 'ident' && t.text.toUpperCase() === kw;

  const parseOr = (): Predicate => {
    let left = parseAnd();
    while (isKw(peek(), 'OR')) {
      pos++;
      const l = left;
      const r = parseAnd();
      left = (rec) => l(rec) || r(rec);
    }
    return left;
  };
  const parseAnd = (): Predicate => {
    let left = parseUnary();
    while (isKw(peek(), 'AND')) {
      pos++;
      const l = left;
      const r = parseUnary();
      left = (rec) => l(rec) && r(rec);
    }
    return left;
  };
  const parseUnary = (): Predicate => {
    if (isKw(peek(), 'NOT')) {
      pos++;
      const inner = parseUnary();
      return (rec) => !inner(rec);
    }
    if (peek()?.kind === 'lparen') {
      pos++;
      const inner = parseOr();
      if (peek()?.kind !== 'rparen') throw new QueryParseError('expected )');
      pos++;
      return inner;
    }
    return parseComparison();
  };
  const parseComparison = (): Predicate => {
    const fieldTok = peek();
    if (fieldTok?.kind !== 'ident' || KEYWORDS.has(fieldTok.text.toUpperCase())) {
      throw new QueryParseError(`expected a search attribute name, got '${fieldTok?.text ?? 'end of query'}'`);
    }
    const field = fieldTok.text;
    if (!knownFields(field)) throw new QueryParseError(`unknown search attribute '${field}'`);
    pos++;
    const opTok = peek();
    if (!opTok) throw new QueryParseError('expected an operator');
    pos++;
    const negated = isKw(opTok, 'NOT');
    const opTok2 = negated ? toks[pos++] : opTok;
    if (isKw(opTok2, 'IN')) {
      if (peek()?.kind !== 'lparen') throw new QueryParseError('expected ( after IN');
      pos++;
      const values: Array<string | number | boolean> = [];
      for (;;) {
        values.push(literal(field, toks[pos++]));
        const t = toks[pos++];
        if (t?.kind === 'rparen') break;
        if (t?.kind !== 'comma') throw new QueryParseError('expected , or ) in IN list');
      }
      return (rec) => values.some((v) => compare(rec[field], '=', v)) !== negated;
    }
    if (isKw(opTok2, 'BETWEEN')) {
      const lo = literal(field, toks[pos++]);
      if (!isKw(toks[pos++], 'AND')) throw new QueryParseError('expected AND in BETWEEN');
      const hi = literal(field, toks[pos++]);
      return (rec) => (compare(rec[field], '>=', lo) && compare(rec[field], '<=', hi)) !== negated;
    }
    if (isKw(opTok2, 'STARTS_WITH')) {
      const prefix = String(literal(field, toks[pos++]));
      return (rec) => {
        const v = rec[field];
        return (typeof v === 'string' && v.startsWith(prefix)) !== negated;
      };
    }
    if (isKw(opTok, 'IS')) {
      const not = isKw(peek(), 'NOT');
      if (not) pos++;
      if (!isKw(toks[pos++], 'NULL')) throw new QueryParseError('expected NULL');
      return (rec) => (rec[field] === undefined || rec[field] === null) !== not;
    }
    if (negated || opTok.kind !== 'op') throw new QueryParseError(`unsupported operator '${opTok.text}'`);
    const value = literal(field, toks[pos++]);
    const op = opTok.text;
    return (rec) => compare(rec[field], op, value);
  };

  if (toks.length === 0) return () => true;
  let end = toks.length;
  const orderAt = toks.findIndex((t, i) => isKw(t, 'ORDER') && isKw(toks[i + 1], 'BY'));
  if (orderAt >= 0) end = orderAt;
  if (end === 0) return () => true;
  const body = toks.slice(0, end);
  toks.length = 0;
  toks.push(...body);
  const pred = parseOr();
  if (pos !== toks.length) throw new QueryParseError(`unexpected '${toks[pos]!.text}'`);
  return pred;
}
