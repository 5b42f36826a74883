-- The run of an idempotency key ended (lh.idempotent): stores its result while its holder still
-- holds the lock (a holder that lost it cannot know who ran since), or, when it threw, forgets
-- the run so that the next caller runs it. Only the run's own record is touched.
-- KEYS[1]  the key's lock (a mutex)
-- KEYS[2]  the key's record (hash: state, fp, result, at, owner, fence)
-- ARGV[1]  the holder's stored value
-- ARGV[2]  'done' with ARGV[3] the result (JSON), or 'failed'
-- ARGV[3]  the result
-- ARGV[4]  how long the record is kept, ms
-- Returns  1 when done (stored) or forgotten; 0 when the lock or the record is no longer this run's
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('HGET', KEYS[2], 'owner') ~= ARGV[1] then
  return 0
end
if ARGV[2] == 'failed' then
  redis.call('DEL', KEYS[2])
  return 1
end
redis.call('HSET', KEYS[2], 'state', 'done', 'result', ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1
