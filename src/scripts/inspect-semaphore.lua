#!lua flags=no-writes
-- Read a semaphore for inspection (see inspect-mutex.lua).
-- KEYS[1]  holders set (member <value>:<i> per permit, score = expiry)   KEYS[2]  fencing counter
-- ARGV[1]  most members returned
-- Returns  {now, fence, permits in use, {member, expiry, ...}}
--- @include "inspect-now"
return {now, redis.call('GET', KEYS[2]), redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf'), live(KEYS[1])}
