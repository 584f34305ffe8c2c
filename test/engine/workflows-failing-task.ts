// A second workflow bundle whose `flakyTask` fails every workflow task: a plain Error thrown from
// TypeScript workflow code fails the task (and the server retries it), not the workflow.
export async function flakyTask(): Promise<string> {
  throw new Error('deliberate workflow task failure');
}
