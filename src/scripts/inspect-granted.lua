#!lua flags=no-writes
-- When the holders that waited got their leases (note-granted.lua), for inspection: read-only,
-- as every inspect-<primitive>.lua, and run after it with the tokens it found.
-- KEYS     the notes of the keys the primitive's holders hold (`<key>:granted`)
-- ARGV     the holders' tokens
-- Returns  {member, ...}: the live notes ("<token>~<epoch ms, base 36>") of those tokens
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wanted = {}
for i = 1, #ARGV do
  wanted[ARGV[i]] = true
end
-- ZRANGE by index, not ZRANGEBYSCORE: a monitoring-only ACL user has +zrange (docs/security.md).
local found = {}
for i = 1, #KEYS do
  local notes = redis.call('ZRANGE', KEYS[i], 0, -1, 'WITHSCORES')
  for j = 1, #notes, 2 do
    local member = notes[j]
    if tonumber(notes[j + 1]) > now and wanted[string.sub(member, 1, (string.find(member, '~', 1, true) or 0) - 1)] then
      found[#found + 1] = member
    end
  end
end
return found
