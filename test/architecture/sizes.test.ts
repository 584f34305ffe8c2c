// The size rules of ARCHITECTURE.md hold on the real tree, and the checker does catch each kind of breach.
import { describe, expect, it } from 'vitest';
import { checkFileSizes, checkSizes, MAX_FILE_LINES, MAX_FUNCTION_LINES } from '../../tools/size-rules.js';

const body = (lines: number) => Array.from({ length: lines }, (_, i) => `  const v${i} = ${i};`).join('\n');

describe('size rules', () => {
  it('hold on every file of src/ and engine/src/', () => {
    expect(checkSizes()).toEqual([]);
  });

  it('catch a function over the limit, by the name it is known by, and let one at the limit pass', () => {
    const long = `export const createThing = () => {\n${body(MAX_FUNCTION_LINES - 1)}\n};\n`;
    expect(checkFileSizes('src/payments/thing.ts', long)).toEqual([
      {
        file: 'src/payments/thing.ts',
        line: 1,
        what: 'function createThing',
        lines: MAX_FUNCTION_LINES + 1,
        limit: MAX_FUNCTION_LINES,
      },
    ]);
    const atLimit = `export function thing() {\n${body(MAX_FUNCTION_LINES - 2)}\n}\n`;
    expect(checkFileSizes('src/payments/thing.ts', atLimit)).toEqual([]);
    const method = `const o = {\n  run() {\n${body(MAX_FUNCTION_LINES)}\n  },\n};\n`;
    expect(checkFileSizes('engine/src/o.ts', method).map((v) => v.what)).toEqual(['function run']);
  });

  it('catch a file over the limit, and leave a workflow function its length', () => {
    const lines = `${body(MAX_FILE_LINES + 1)}\n`;
    expect(checkFileSizes('src/escrow/big.ts', lines).map((v) => [v.what, v.lines])).toEqual([['the file', MAX_FILE_LINES + 1]]);
    const workflow = `export async function escrowWorkflow() {\n${body(MAX_FUNCTION_LINES * 2)}\n}\n`;
    expect(checkFileSizes('src/workflows/escrow.ts', workflow)).toEqual([]);
  });
});
