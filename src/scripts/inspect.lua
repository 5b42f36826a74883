-- Read one primitive's state for inspection (lh.inspect, lh.list, leasehold top, the dashboard).
-- Read-only: it writes nothing, so inspecting never changes what holders and waiters see.
-- ARGV[1]  kind: mutex | semaphore | rwlock | fair | election
-- ARGV[2]  most members returned per sorted set (holders, readers, waiters)
-- KEYS     mutex:     lock, fence
--          semaphore: holders set, fence
--          rwlock:    writer, readers, waiting writers, fence
--          fair:      lock, fence, queue, deadlines
--          election:  leader hash, fence
-- Returns  {now (server ms), kind-specific fields...}; a missing string is nil (false in Lua).
--          mutex:     {now, value, pttl, fence}
--          semaphore: {now, fence, used, {member, expiry, ...}}
--          rwlock:    {now, fence, writer, writer pttl, {reader, expiry, ...}, {writer, deadline, ...}}
--          fair:      {now, fence, value, pttl, queued, {waiter, deadline, ...}}
--          election:  {now, fence, token, value, term fence, pttl}
-- Sorted sets scored by expiry (server ms) hold expired members until the next write sweeps
-- them: only the live ones are returned, the first `max` of them.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local kind, max = ARGV[1], tonumber(ARGV[2])
local function live(key)
  local first = redis.call('ZCOUNT', key, '-inf', now)
  return redis.call('ZRANGE', key, first, first + max - 1, 'WITHSCORES')
end
if kind == 'mutex' then
  return {now, redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2])}
elseif kind == 'semaphore' then
  return {now, redis.call('GET', KEYS[2]), redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf'), live(KEYS[1])}
elseif kind == 'rwlock' then
  return {now, redis.call('GET', KEYS[4]), redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]),
    live(KEYS[2]), live(KEYS[3])}
elseif kind == 'fair' then
  local waiters = {}
  for _, member in ipairs(redis.call('ZRANGE', KEYS[3], 0, max - 1)) do
    local deadline = redis.call('ZSCORE', KEYS[4], member)
    if deadline and tonumber(deadline) > now then
      waiters[#waiters + 1] = member
      waiters[#waiters + 1] = deadline
    end
  end
  return {now, redis.call('GET', KEYS[2]), redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]),
    redis.call('ZCARD', KEYS[3]), waiters}
end
local leader = redis.call('HMGET', KEYS[1], 'token', 'value', 'fence')
return {now, redis.call('GET', KEYS[2]), leader[1], leader[2], leader[3], redis.call('PTTL', KEYS[1])}
