/** All keys of one primitive share the hash tag `{name}`, so its scripts run on Redis Cluster. */
export const keyFor = (prefix: string, name: string, suffix = ''): string =>
  `${prefix}:{${name}}${suffix === '' ? '' : `:${suffix}`}`;
