// An idempotent `POST /charge` endpoint (docs/idempotency.md): the charge runs once per
// Idempotency-Key, whichever of three replicas gets the request and however often it is retried.
// Run: REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/idempotent-http.ts
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { IdempotencyConflictError, Leasehold, LockTimeoutError, OutcomeUnknownError } from 'leasehold';

let charges = 0;
/** The payment provider, for the example: slow, and counting. */
async function charge(order: { amount: number }, key: string): Promise<{ id: string; amount: number }> {
  charges += 1;
  await new Promise((resolve) => setTimeout(resolve, 200));
  return { id: `ch_${key}`, amount: order.amount };
}

async function replica(lh: Leasehold) {
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const key = req.headers['idempotency-key'];
    let body = '';
    for await (const chunk of req) body += chunk;
    if (typeof key !== 'string' || key === '')
      return void res.writeHead(400).end('Idempotency-Key is required');
    const fingerprint = createHash('sha256').update(body).digest('hex');
    try {
      const receipt = await lh.idempotent(`example:charge:${key}`, () => charge(JSON.parse(body), key), {
        fingerprint,
        timeout: 10_000,
      });
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(receipt));
    } catch (error) {
      const status =
        error instanceof IdempotencyConflictError
          ? 422
          : error instanceof LockTimeoutError
            ? 409
            : error instanceof OutcomeUnknownError
              ? 502
              : 500;
      res.writeHead(status).end(String(error));
    }
  };
  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/charge` };
}

const instances = await Promise.all([1, 2, 3].map(() => Leasehold.connect()));
const replicas = await Promise.all(instances.map(replica));
const post = (url: string, key: string, amount: number) =>
  fetch(url, { method: 'POST', headers: { 'idempotency-key': key }, body: JSON.stringify({ amount }) });

// A client retries the same request on every replica at once: one charge, one answer.
const key = `k${Date.now()}`;
const answers = await Promise.all(replicas.map(({ url }) => post(url, key, 1999).then((r) => r.text())));
console.log(`${answers.length} answers, ${new Set(answers).size} distinct, ${charges} charge`);
// The same key for another request: refused.
const reused = await post(replicas[0]!.url, key, 5);
console.log(`the key reused for another amount: ${reused.status}`);

for (const { server } of replicas) server.close();
await Promise.all(instances.map((lh) => lh.close()));
if (charges !== 1 || new Set(answers).size !== 1 || reused.status !== 422) process.exitCode = 1;
