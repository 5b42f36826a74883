-- The run recorded for an idempotency key (lh.idempotent, docs/idempotency.md), and whether a
-- holder has its lock now.
-- KEYS[1]  the key's lock (a mutex)
-- KEYS[2]  the key's record (hash: state 'running' or 'done', fp, result, at, owner, fence)
-- Returns  {state or '', fp, result, at, owner, fence, 1 when the lock is held else 0}
local r = redis.call('HMGET', KEYS[2], 'state', 'fp', 'result', 'at', 'owner', 'fence')
for i = 1, 6 do
  if not r[i] then
    r[i] = ''
  end
end
r[7] = redis.call('EXISTS', KEYS[1])
return r
