// Leader election: two candidates, one leader at a time, and an observer that sees every change.
// Run: REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/election.ts
import { Leasehold } from 'leasehold';

// Two instances stand in for two processes; both connect to REDIS_URL.
const [a, b] = await Promise.all([Leasehold.connect(), Leasehold.connect()]);
const observing = new AbortController();

const observer = (async () => {
  for await (const change of a.election('example:scheduler').observe({ signal: observing.signal })) {
    console.log(`observed: ${change.type} ${change.leader?.value ?? ''} (term ${change.fencingToken})`);
  }
})().catch(() => {});

const term = await a.election('example:scheduler').campaign('node-a');
const waiting = b.election('example:scheduler').campaign('node-b'); // waits for node-a to go
await term.proclaim('node-a (draining)');
console.log('leader now:', await b.election('example:scheduler').leader());
await term.resign();
const next = await waiting; // elected the moment node-a resigned
console.log(`node-b leads with term ${next.fencingToken} > ${term.fencingToken}`);
await next.resign();

setTimeout(() => observing.abort(), 100);
await observer;
await Promise.all([a.close(), b.close()]);
