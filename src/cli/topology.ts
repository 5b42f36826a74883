import { redact } from '../base/redact.ts';
import { checkConnectOptions } from '../options/index.ts';
import { CliError } from './exit.ts';

/**
 * Where a command connects, as `Leasehold.connect` takes it: one Redis (`--redis`), a Cluster
 * (`--cluster`), the master of a Sentinel set (`--sentinel`) or a quorum of independent
 * masters (`--nodes`).
 */
export type Topology =
  | { kind: 'redis' }
  | { kind: 'cluster'; rootNodes: string[] }
  | { kind: 'sentinel'; name: string; sentinels: string[] }
  | { kind: 'nodes'; urls: string[] }
  | { kind: 'postgres'; url: string; schema: string; table: string };

export const topologyHelp = `Topology (one of them, instead of --redis; the same as Leasehold.connect's options):
  --cluster <url,...>     a Redis Cluster: any of its nodes (every master is read, each one's
                          pushes followed)
  --sentinel <name>@<url,...>  the master <name> that these sentinels name (followed through a
                          failover)
  --nodes <url,url,url>   a quorum of independent masters: each node's copy is shown, and which
                          names a node is missing (under-replicated)
  --postgres <url>        PostgreSQL instead of Redis (docs/postgres.md): postgres://user@host/db;
                          keep a password out of ps with PGPASSWORD, which node-postgres reads
  --schema <name>, --table <name>  where the rows are, with --postgres (default: leasehold,
                          leasehold_keys)`;

/** A connection's URL (one Redis) and topology. */
interface Where {
  url: string;
  topology: Topology;
}

type TopologyValues = {
  postgres?: string | undefined;
  schema?: string | undefined;
  table?: string | undefined;
  cluster?: string | undefined;
  sentinel?: string | undefined;
  nodes?: string | undefined;
};

const list = (value: string): string[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/**
 * The topology flags, checked by `Leasehold.connect`'s own option checks (a TypeError from them is
 * a usage error). At most one of --redis, --cluster, --sentinel and --nodes.
 */
export function topologyOf(values: TopologyValues & { redis?: string | undefined }): Topology {
  const given = (['redis', 'cluster', 'sentinel', 'nodes', 'postgres'] as const).filter(
    (flag) => values[flag] !== undefined,
  );
  if (given.length > 1) {
    throw new CliError(
      `${given.map((f) => `--${f}`).join(' and ')}: give one of them (one topology at a time)`,
    );
  }
  if (values.postgres === undefined) {
    for (const flag of ['schema', 'table'] as const) {
      if (values[flag] !== undefined) throw new CliError(`--${flag} goes with --postgres`);
    }
  }
  let topology: Topology = { kind: 'redis' };
  if (values.postgres !== undefined) {
    topology = {
      kind: 'postgres',
      url: values.postgres,
      schema: values.schema ?? 'leasehold',
      table: values.table ?? 'leasehold_keys',
    };
  } else if (values.cluster !== undefined) topology = { kind: 'cluster', rootNodes: list(values.cluster) };
  else if (values.nodes !== undefined) topology = { kind: 'nodes', urls: list(values.nodes) };
  else if (values.sentinel !== undefined) {
    const at = values.sentinel.indexOf('@');
    if (at <= 0) throw new CliError('--sentinel must be <master-name>@<url>[,<url>...]');
    topology = {
      kind: 'sentinel',
      name: values.sentinel.slice(0, at),
      sentinels: list(values.sentinel.slice(at + 1)),
    };
  }
  return topology;
}

/** The topology as `Leasehold.connect` options, for its checks and for `run`. */
export function topologyOptions(topology: Topology): Record<string, unknown> {
  switch (topology.kind) {
    case 'cluster':
      return { cluster: { rootNodes: topology.rootNodes } };
    case 'sentinel':
      return { sentinel: { name: topology.name, sentinels: topology.sentinels } };
    case 'nodes':
      return { nodes: topology.urls };
    case 'postgres':
      return { postgres: { url: topology.url, schema: topology.schema, table: topology.table } };
    default:
      return {};
  }
}

/** Runs the library's checks on the topology (node URLs, how many nodes, the master name). */
export function checkTopologyFlags(topology: Topology): void {
  if (topology.kind === 'redis') return;
  checkConnectOptions({ ...topologyOptions(topology), notifications: 'polling' });
}

/** Every URL the connection names (TLS flags need rediss:// on each). */
export function urlsOf(conn: Where): string[] {
  const t = conn.topology;
  if (t.kind === 'cluster') return t.rootNodes;
  if (t.kind === 'sentinel') return t.sentinels;
  if (t.kind === 'nodes') return t.urls;
  if (t.kind === 'postgres') return [t.url];
  return [conn.url];
}

/** How the connection is named in messages and headers, without credentials. */
export function describeTarget(conn: Where): string {
  const t = conn.topology;
  const urls = urlsOf(conn).map(redact).join(', ');
  if (t.kind === 'cluster') return `the cluster (${urls})`;
  if (t.kind === 'sentinel') return `the master "${t.name}" (sentinels ${urls})`;
  if (t.kind === 'nodes') return `${t.urls.length} nodes (${urls})`;
  if (t.kind === 'postgres') return `PostgreSQL at ${urls}`;
  return redact(conn.url);
}
