// vitest setupFiles: before any file of a process starts a Temporal worker (the SDK would install its default
// runtime, and ours could no longer be), install the test runtime (runtime.ts). Once per process: files share it.
import { installTestRuntime } from './runtime.js';

installTestRuntime();
