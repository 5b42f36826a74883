#!lua flags=no-writes
-- Read a read-write lock for inspection (see inspect-mutex.lua).
-- KEYS[1]  writer key   KEYS[2]  readers set   KEYS[3]  waiting writers set   KEYS[4]  fencing counter
-- KEYS[5]  waiting readers' queue (optional: readers registered for a direct grant, arrival order)
-- ARGV[1]  most members returned per set
-- Returns  {now, fence, writer, writer pttl, {reader, expiry, ...}, {writer, deadline, ...},
--           readers queued, {waiting reader, ...}, readers' queue pttl}
--- @include "inspect-now"
--- @include "inspect-queue"
local queued, waiters, lapse = registered(KEYS[5])
return {now, redis.call('GET', KEYS[4]), redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]),
  live(KEYS[2]), live(KEYS[3]), queued, waiters, lapse}
