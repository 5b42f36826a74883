-- A holder that waited notes when it got its lease, for inspection (lh.inspect, leasehold status
-- and top, the dashboard): its stored value says when it began to ask, which is when it got the
-- lease only for a holder whose first attempt got it (those note nothing: the uncontended path
-- pays no command). Sent by the holder 50 ms after it got the lease, if it still holds it, and
-- again after its renewals (src/engine/grant-notes.ts), so that a note lives as long as its lease
-- and one ttl more; nothing removes it at release: a note names its own holder's token, which no
-- later holder has.
-- KEYS     the notes of the keys the lease holds (`<key>:granted`: base/grant-note-format.ts):
--          sorted sets, member "<token>~<when it got the lease, epoch ms of its own clock, base
--          36>", score = when the note lapses (server ms)
-- ARGV[1]  the member
-- ARGV[2]  the lease's ttl in ms
-- Returns  0
--- @include "add-lapsing"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lapse = now + tonumber(ARGV[2])
for i = 1, #KEYS do
  addLapsing(KEYS[i], ARGV[1], lapse, now)
end
return 0
