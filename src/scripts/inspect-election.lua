#!lua flags=no-writes
-- Read an election for inspection (see inspect-mutex.lua).
-- KEYS[1]  leader hash (token, value, fence)   KEYS[2]  fencing counter
-- ARGV[1]  unused
-- Returns  {now, fence, leader token, value, term fence, leader pttl}
--- @include "inspect-now"
local leader = redis.call('HMGET', KEYS[1], 'token', 'value', 'fence')
return {now, redis.call('GET', KEYS[2]), leader[1], leader[2], leader[3], redis.call('PTTL', KEYS[1])}
