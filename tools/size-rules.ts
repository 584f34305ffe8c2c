// The size rules of ARCHITECTURE.md ("Sizes"): no file of src/ or engine/src/ over MAX_FILE_LINES lines, and no
// function over MAX_FUNCTION_LINES lines outside the workflows (a workflow is one function by Temporal's design: its
// state lives in its closure). A module that grows past them is one use case too many for one place: split it by use
// case, as src/payments does. `npm run lint` prints the violations; test/architecture/sizes.test.ts fails on any.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { ROOT } from './import-rules.js';

export const MAX_FILE_LINES = 600;
export const MAX_FUNCTION_LINES = 150;
/** Where a long function is the framework's shape, not a module that grew. */
const LONG_FUNCTIONS_ALLOWED = ['src/workflows/'];

export interface SizeViolation {
  readonly file: string;
  readonly line: number;
  readonly what: string;
  readonly lines: number;
  readonly limit: number;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const isFunction = (node: ts.Node): node is ts.FunctionLikeDeclaration =>
  ts.isFunctionDeclaration(node) ||
  ts.isFunctionExpression(node) ||
  ts.isArrowFunction(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isConstructorDeclaration(node) ||
  ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node);

/** A function's name as a reader finds it: its own, or the variable or property it is assigned to. */
function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText();
  return '(anonymous function)';
}

/** The size violations of one file (repository-relative path), given its text. */
export function checkFileSizes(file: string, text: string): SizeViolation[] {
  const found: SizeViolation[] = [];
  const lineCount = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lineCount > MAX_FILE_LINES) {
    found.push({ file, line: 1, what: 'the file', lines: lineCount, limit: MAX_FILE_LINES });
  }
  if (LONG_FUNCTIONS_ALLOWED.some((prefix) => file.startsWith(prefix))) return found;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node: ts.Node): void => {
    if (isFunction(node) && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > MAX_FUNCTION_LINES) {
        found.push({ file, line: first + 1, what: `function ${nameOf(node)}`, lines, limit: MAX_FUNCTION_LINES });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

export function checkSizes(): SizeViolation[] {
  return ['src', 'engine/src'].flatMap((dir) =>
    sourceFiles(dir).flatMap((file) => checkFileSizes(file, readFileSync(join(ROOT, file), 'utf8'))),
  );
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const violations = checkSizes();
  for (const v of violations) console.log(`${v.file}:${v.line}: ${v.what} is ${v.lines} lines (at most ${v.limit})`);
  if (violations.length > 0) process.exitCode = 1;
  else console.log('size rules: ok');
}
