-- Release a lease: delete the key only when it still holds this owner's token.
-- KEYS[1]  lock key
-- ARGV[1]  owner token
-- Returns  1 when deleted, 0 when the key was gone or held by someone else.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
