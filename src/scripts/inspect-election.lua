#!lua flags=no-writes
-- Read an election for inspection (see inspect-mutex.lua).
-- KEYS[1]  leader hash (token, value, fence)   KEYS[2]  fencing counter
-- KEYS[3]  candidates (optional; see election-campaign.lua)
-- ARGV[1]  most candidates returned
-- Returns  {now, fence, leader token, value, term fence, leader pttl, candidates,
--           {candidate, lapse, ...}}: the candidates whose records have not lapsed
--- @include "inspect-now"
local leader = redis.call('HMGET', KEYS[1], 'token', 'value', 'fence')
local count, candidates = 0, {}
if KEYS[3] then
  count, candidates = redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf'), live(KEYS[3])
end
return {now, redis.call('GET', KEYS[2]), leader[1], leader[2], leader[3], redis.call('PTTL', KEYS[1]),
  count, candidates}
