#!lua flags=no-writes
-- Read a read-write lock for inspection (see inspect-mutex.lua).
-- KEYS[1]  writer key   KEYS[2]  readers set   KEYS[3]  waiting writers set   KEYS[4]  fencing counter
-- ARGV[1]  most members returned per set
-- Returns  {now, fence, writer, writer pttl, {reader, expiry, ...}, {writer, deadline, ...}}
--- @include "inspect-now"
return {now, redis.call('GET', KEYS[4]), redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]),
  live(KEYS[2]), live(KEYS[3])}
