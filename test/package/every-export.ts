// A consumer that touches every public export and every member docs/ and the README document.
// test/package/consumer.test.ts copies it into scratch projects that install the packed tarball
// and compiles it there with `skipLibCheck: false`, `strict` and `exactOptionalPropertyTypes`,
// under TypeScript 5.x and 7.x, as ESM and CommonJS. It is compiled, not run: `touch` is never
// called. In this repository it type-checks against src/ (tsconfig paths).
import {
  CHANNELS,
  ConnectError,
  ConnectionClosedError,
  type ConnectOptions,
  DurabilityError,
  type Election,
  ERROR_CODES,
  type FairLock,
  type Holder,
  IdempotencyConflictError,
  type IdempotentOptions,
  type Inspection,
  type Leader,
  type LeadershipChange,
  type LeadOptions,
  type Lease,
  Leasehold,
  LeaseholdError,
  type LeaseholdEvents,
  type LeaseWork,
  LockLostError,
  LockReleasedError,
  LockTimeoutError,
  type LossReason,
  MemoryBackend,
  MultiLease,
  type MultiLock,
  type NodeInspection,
  NotificationsError,
  OutcomeUnknownError,
  type Primitive,
  QuorumError,
  type ReadWriteLock,
  RedisCommandError,
  RedisUnavailableError,
  ScriptingUnavailableError,
  type Semaphore,
  type Term,
  type Waiter,
} from 'leasehold';
import { MemoryBackend as Memory } from 'leasehold/memory';
import {
  LeaseholdModule,
  type LeaseholdModuleAsyncOptions,
  WithLock,
  type WithLockOptions,
} from 'leasehold/nestjs';
import { type RunCoordinator, type RunCoordinatorOptions, runCoordinator } from 'leasehold/node-cron';

type Assert<T extends true> = T;
type Is<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

export async function touch(signal: AbortSignal): Promise<unknown[]> {
  const options: ConnectOptions = { url: 'redis://127.0.0.1:6379', prefix: 'app', ttl: 10_000 };
  const lh: Leasehold = await Leasehold.connect(options);
  const memory = await Leasehold.connect({ client: new Memory() });
  const shared: MemoryBackend = MemoryBackend.shared;

  const lease: Lease = await lh.acquire('a', { timeout: 1_000, signal, ttl: 5_000, owner: 'me' });
  const name: string = lease.name;
  const token: string = lease.token;
  const fencingToken: bigint = lease.fencingToken;
  const leaseSignal: AbortSignal = lease.signal;
  const lost: boolean = lease.lost;
  const expiresAt: number = lease.expiresAt;
  await lease.extend(1_000);
  const released: boolean = await lease.release();
  {
    await using _held = await lh.acquire('b');
  }
  const maybe: Lease | undefined = await lh.tryAcquire('c', { ttl: 1_000 });
  const taken: Lease = await lh.forceAcquire('c');
  const out: number = await lh.withLock('d', async (held) => Number(held.fencingToken), { timeout: 1 });
  const work: LeaseWork<Lease, string> = (held, stop) => `${held.name} ${stop.aborted}`;
  const worked: string = await lh.withLock('d', work, { renew: false, minHold: 1_000 });
  const kept: Lease | undefined = await lh.tryAcquire('tick', { renew: false, minHold: 50_000 });
  const idem: IdempotentOptions = { keep: 60_000, fingerprint: 'sha', retryUnknown: false, timeout: 1 };
  const receipt: { id: string } = await lh.idempotent('charge:1', async () => ({ id: 'r' }), idem);

  const multi: MultiLock = lh.multiLock(['x', 'y']);
  const all = await multi.acquire({ timeout: 1_000 });
  const isMulti: boolean = all instanceof MultiLease;
  const tokens: Map<string, bigint> = (all as MultiLease).fencingTokens;

  const sem: Semaphore = lh.semaphore('uploads', { limit: 10 });
  const semName: string = sem.name;
  const limit: number = sem.limit;
  const permit: Lease = await sem.acquire({ permits: 2, timeout: 1_000 });
  const tryPermit: Lease | undefined = await sem.tryAcquire({ permits: 1 });
  const count: number = await sem.count();
  const viaPermit: number = await sem.withPermit((p) => Number(p.fencingToken), { permits: 1 });

  const rw: ReadWriteLock = lh.readWriteLock('config');
  const r: Lease = await rw.read({ timeout: 1 });
  const w: Lease = await rw.write();
  const tr: Lease | undefined = await rw.tryRead();
  const tw: Lease | undefined = await rw.tryWrite();
  const viaRead: boolean = await rw.withRead((_l, stop) => stop.aborted);
  const viaWrite: boolean = await rw.withWrite((_l, stop) => stop.aborted, { timeout: 1 });

  const fair: FairLock = lh.fairLock('payouts');
  const turn: Lease = await fair.acquire({ signal });
  const tryTurn: Lease | undefined = await fair.tryAcquire();
  const viaTurn: bigint = await fair.withLock((l) => l.fencingToken);

  const election: Election = lh.election('scheduler');
  const term: Term = await election.campaign('node-a', { timeout: 1_000 });
  await term.proclaim('node-a2');
  const resigned: boolean = await term.resign();
  const leader: Leader | undefined = await election.leader();
  const changes: LeadershipChange[] = [];
  for await (const change of election.observe({ signal })) changes.push(change);
  const lead: LeadOptions = { signal, ttl: 3_000, owner: 'node-a' };
  await election.lead('node-a', async (t: Term) => void t.fencingToken, lead);
  const leading: boolean = election.isLeader;

  const inspection: Inspection | undefined = await lh.inspect('a');
  const primitive: Primitive | undefined = inspection?.primitive;
  const holders: Holder[] | undefined = inspection?.holders;
  const waiters: Waiter[] | undefined = inspection?.waiters;
  const nodes: NodeInspection[] | undefined = inspection?.nodes;
  const listed: Inspection[] = await lh.list({ prefix: 'cron:' });

  lh.on('acquired', (event: LeaseholdEvents['acquired']) => void event.fencingToken);
  lh.on('lost', ({ error }) => void (error instanceof LeaseholdError));
  const stats = lh.stats;
  const held: number = stats.held;
  const mode: 'tracking' | 'polling' = lh.notifications;

  const errors = [
    new LockTimeoutError('a', 1),
    ConnectError,
    ConnectionClosedError,
    DurabilityError,
    LockLostError,
    LockReleasedError,
    NotificationsError,
    OutcomeUnknownError,
    QuorumError,
    RedisCommandError,
    RedisUnavailableError,
    ScriptingUnavailableError,
    new IdempotencyConflictError('k'),
    new OutcomeUnknownError('k', 0, undefined, 1n),
  ];
  const unknown = new OutcomeUnknownError('k', 0, 'o', 1n);
  const unknownAt: number = unknown.startedAt;
  const unknownBy: string | undefined = unknown.owner;

  const coordinator: RunCoordinator = runCoordinator(lh, {
    prefix: 'cron:',
    minHold: 1_000,
  } satisfies RunCoordinatorOptions);
  const runs: boolean = await coordinator.shouldRun('purge:1', 30_000);
  await coordinator.onComplete('purge:1');
  const nest = LeaseholdModule.forRoot(options);
  const nestAsync = LeaseholdModule.forRootAsync({
    useFactory: () => options,
    inject: [],
  } satisfies LeaseholdModuleAsyncOptions);
  const lockOptions: WithLockOptions = { skipIfHeld: true, minHold: 50_000, timeout: 1, ttl: 1, owner: 'o' };
  const decorator: MethodDecorator = WithLock((id: string) => `report:${id}`, lockOptions);
  const code: string = new LockTimeoutError('a', 1).code;
  const codes: readonly string[] = Object.values(ERROR_CODES);
  const reason: LossReason | undefined = undefined;
  const channels: object = CHANNELS;
  type _leaseIsClass = Assert<Is<typeof lease, Lease>>;

  await memory.close();
  const destroyed: Promise<void> = lh.destroy();
  await lh.close();
  await destroyed;
  return [
    name,
    token,
    fencingToken,
    leaseSignal,
    lost,
    expiresAt,
    released,
    maybe,
    taken,
    out,
    worked,
    kept,
    receipt,
    viaPermit,
    viaRead,
    viaWrite,
    viaTurn,
    leading,
    unknownAt,
    unknownBy,
    runs,
    nest,
    nestAsync,
    decorator,
    isMulti,
    tokens,
    semName,
    limit,
    permit,
    tryPermit,
    count,
    r,
    w,
    tr,
    tw,
    turn,
    tryTurn,
    resigned,
    leader,
    changes,
    primitive,
    holders,
    waiters,
    nodes,
    listed,
    held,
    mode,
    errors,
    code,
    codes,
    reason,
    channels,
    shared,
  ];
}
