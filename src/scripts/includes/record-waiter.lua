-- recordWaiter(set, stored, ttl, pttl): a waiter that found what it waits for taken, and that
-- Redis records only so that inspection can list it (an election's candidates, a multiLock's
-- waiters), is put in `set` with the time its record lapses: after the holder's remaining TTL
-- `pttl` (or the waiter's own `ttl`, whichever is longer) plus its own `ttl`. Such a waiter
-- attempts again at the latest when the holder's TTL runs out (sooner on a push, or every
-- retryDelay when polling), so its record never lapses while it waits, and no attempt is added
-- for it: the record costs no command. A waiter that died lapses on its own; one that gave up is
-- removed by forget-waiter.lua, one that got what it waited for by its own successful attempt.
-- Included inside the branch that records, so that other calls do not define it.
--- @include "add-lapsing"
local function recordWaiter(set, stored, ttl, pttl)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  addLapsing(set, stored, now + math.max(pttl, ttl) + ttl, now)
end
