// Part 1 of the fuzz walk of every route: test/api/fuzz-walk.ts.
import { fuzzWalk } from './fuzz-walk.js';

await fuzzWalk(1);
