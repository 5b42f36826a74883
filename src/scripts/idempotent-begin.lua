-- A holder of an idempotency key's lock is about to run it (lh.idempotent): when no run is
-- recorded, records this one as running, so that a crash or a lost lock before it finishes
-- leaves "outcome unknown" behind rather than nothing. Otherwise says what is recorded.
-- KEYS[1]  the key's lock (a mutex): its holder's stored value
-- KEYS[2]  the key's record (hash: state, fp, result, at, owner, fence)
-- ARGV[1]  the holder's stored value
-- ARGV[2]  the request's fingerprint ('' for none)
-- ARGV[3]  how long the record is kept, ms
-- ARGV[4]  the holder's fencing token
-- ARGV[5]  '1': replace a run recorded as running (the caller chose to run again, retryUnknown)
-- Returns  {1} recorded as running: run it; {-1} this value does not hold the lock (lost);
--          {0, state, fp, result, at, owner, fence} a run is recorded
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {-1}
end
local state = redis.call('HGET', KEYS[2], 'state')
if state and not (state == 'running' and ARGV[5] == '1') then
  local r = redis.call('HMGET', KEYS[2], 'fp', 'result', 'at', 'owner', 'fence')
  return {0, state, r[1] or '', r[2] or '', r[3] or '', r[4] or '', r[5] or ''}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'state', 'running', 'fp', ARGV[2], 'at', now, 'owner', ARGV[1], 'fence', ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {1}
