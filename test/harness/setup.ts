// Loaded with --import into every test process: any unhandled rejection or uncaught exception
// fails the run, because "nothing in the background may crash the process" is a product promise.
const fail = (kind: string) => (error: unknown) => {
  console.error(`\n[harness] ${kind} in a test process:`, error);
  process.exitCode = 1;
};
process.on('unhandledRejection', fail('unhandled rejection'));
process.on('uncaughtException', fail('uncaught exception'));
