-- addLapsing(set, member, lapse, now): puts `member` in the sorted set `set` scored by when it
-- lapses (`lapse`, server ms), sweeps the members lapsed by `now`, and keeps the set alive as long
-- as its longest member, so that nothing has to remove a member whose owner died. Used by the
-- waiters' records for inspection (record-waiter.lua) and the holders' grant notes
-- (note-granted.lua). The set is written last, never last read: no tracking rule leaves the
-- caller's connection listening to it.
local function addLapsing(set, member, lapse, now)
  redis.call('ZREMRANGEBYSCORE', set, '-inf', now)
  local last = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
  redis.call('ZADD', set, lapse, member)
  local keep = lapse
  if last[2] and tonumber(last[2]) > keep then
    keep = tonumber(last[2])
  end
  redis.call('PEXPIREAT', set, string.format('%.0f', keep))
end
