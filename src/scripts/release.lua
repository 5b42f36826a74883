-- Release a lease: delete the key only when it still holds this owner's token, then grant the
-- lock to the first waiter registered for a direct grant, if any (includes/grant-next.lua).
-- KEYS[1]  lock key
-- KEYS[2]  fencing counter   (KEYS[2..5] optional: without them, no grant)
-- KEYS[3]  waiters' queue
-- KEYS[4]  waiters' records
-- KEYS[5]  fence mark        (the counter's high-water mark: includes/fence-mark.lua)
-- ARGV[1]  owner token
-- Returns  1 when deleted (and granted on or not), 0 when the key was gone or held by someone else.
-- The common release (nobody registered) runs three commands and defines no function: the grant
-- step's functions are defined below the early return, where only a release with waiters gets.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  -- A lease that was lost (its grant lapsed unclaimed, a takeover) leaves no grant record behind.
  -- (EXISTS first: a user whose ACL predates grants has no records, and may lack HDEL.)
  if KEYS[4] and redis.call('EXISTS', KEYS[4]) == 1 then
    redis.call('HDEL', KEYS[4], ARGV[1])
  end
  return 0
end
redis.call('DEL', KEYS[1])
-- Only a name with registered waiters (or a granted lease's record) touches the others: a
-- user whose ACL predates direct grants (no HDEL, no PUBLISH) releases as before, since
-- without a subscription to its grant channel no waiter of theirs ever registers.
if not KEYS[3] or redis.call('EXISTS', KEYS[4]) == 0 then
  return 1
end
--- @include "grant-next"
FENCE_MARK = KEYS[5]
-- A granted lease's record, if a release comes before the attempt that would have read it.
redis.call('HDEL', KEYS[4], ARGV[1])
grantNext(KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return 1
