-- Become leader if there is none.
-- KEYS[1]  leader hash: token, value, fence, logexpiry; with a TTL
-- KEYS[2]  fencing counter (one term = one number; expires as next-fence.lua says)
-- KEYS[3]  change log: a stream of {type = elected | proclaimed | vacant, fence, value}; it expires
--          IDLE_MS after the term (logexpiry, server ms: when the leader's extensions last set it)
-- ARGV[1]  candidate token
-- ARGV[2]  value to proclaim
-- ARGV[3]  ttl in ms
-- ARGV[4]  approximate length the log is trimmed to
-- KEYS[4]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
-- KEYS[5]  candidates (optional): sorted set, member = candidate token, score = when its record
--          lapses (server ms); read by inspection only (lh.inspect, leasehold status and top)
-- ARGV[5]  with KEYS[5]: '1' when this candidate will wait, so it is recorded among the candidates
-- Returns  {1, fencingToken} when elected, {0, pttl of the current leader} otherwise.
-- A term that ended by expiry is logged as vacant here, before the new term, so that observers
-- see every change in order.
-- Tracking: both branches end with a read of the leader key after the last write to it: the new
-- leader hears of a takeover or deletion, a candidate of the vacancy. The candidates are written,
-- never last read, so no tracking rule leaves a candidate listening to them on the first rule, and
-- on Redis 7.0 their pushes reach no wait (a candidate listens to the leader key only).
--- @include "next-fence"
FENCE_MARK = KEYS[4]
if redis.call('EXISTS', KEYS[1]) == 1 then
  local pttl = redis.call('PTTL', KEYS[1])
  if KEYS[5] and ARGV[5] == '1' then
--- @include "record-waiter"
    recordWaiter(KEYS[5], ARGV[1], tonumber(ARGV[3]), pttl)
  end
  return {0, pttl}
end
if KEYS[5] then
  redis.call('ZREM', KEYS[5], ARGV[1])
end
local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)[1]
if last and last[2][2] ~= 'vacant' then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'type', 'vacant', 'fence', last[2][4], 'value', '')
end
local fence = string.format('%.0f', nextFence(KEYS[2]))
local t = redis.call('TIME')
local logexpiry = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[3]) + IDLE_MS)
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'value', ARGV[2], 'fence', fence, 'logexpiry', logexpiry)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'type', 'elected', 'fence', fence, 'value', ARGV[2])
redis.call('PEXPIREAT', KEYS[3], logexpiry)
redis.call('EXISTS', KEYS[1])
return {1, fence}
