// The benchmark's activity: returns its input, so the figures measure the server and the SDK, not user code.
export const benchActivities = {
  async echo(value: string): Promise<string> {
    return value;
  },
};

export type BenchActivities = typeof benchActivities;
