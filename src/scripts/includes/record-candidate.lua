-- recordCandidate(candidates, stored, ttl, pttl): a candidate that found a leader is recorded for
-- inspection with the time its record lapses: after the leader's remaining TTL (or its own TTL,
-- whichever is longer) plus its own TTL. A waiting candidate attempts again at the latest when
-- the leader's TTL runs out (sooner on a push), so its record never lapses while it waits, and
-- no attempt is added for it: the record costs no command. A candidate that died lapses on its
-- own; one that gave up is removed by election-withdraw.lua.
-- Included inside the branch that records, so that other calls do not define it.
local function recordCandidate(candidates, stored, ttl, pttl)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', candidates, '-inf', now)
  local lapse = now + math.max(pttl, ttl) + ttl
  local last = redis.call('ZRANGE', candidates, -1, -1, 'WITHSCORES')
  redis.call('ZADD', candidates, lapse, stored)
  -- The set lives as long as its longest record, and is written last (not read last).
  if last[2] and tonumber(last[2]) > lapse then
    lapse = tonumber(last[2])
  end
  redis.call('PEXPIREAT', candidates, string.format('%.0f', lapse))
end
