-- Extend a term if this candidate still leads.
-- KEYS[1]  leader hash
-- ARGV[1]  token
-- ARGV[2]  ttl in ms
-- Returns  1 when extended, 0 when no longer leader.
-- The PEXPIRE disarms tracking of the leader key; the closing read arms it again, so the leader
-- keeps hearing of a takeover after its first extension (on every server line).
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('EXISTS', KEYS[1])
  return 1
end
return 0
