--- @include "idle"
-- raiseFence(key, token): quorum mode: raise the fencing counter at `key` to `token` (a decimal
-- string, drawn on another node, by another clock) unless it already counts that far. The raised
-- counter expires IDLE_MS after the later of the token's time and now: at max(floor(token / 1000)
-- + 1, now) + IDLE_MS (server ms). Once it expires, this node's clock reads past token + IDLE_MS *
-- 1000 us, and its re-seed lands above every token drawn since the raise, as after nextFence's
-- seed. Keeping the old expiry instead would not do: it came from a smaller value, and a token from
-- a node whose clock runs ahead could outlive it. A token from a clock behind this one gets
-- IDLE_MS from now, as a seed would: an expiry already past would leave no counter, and servers
-- differ in whether such a SET disarms the tracking the GET below armed (Valkey does not).
-- A counter that already counts that far keeps its value and its expiry: that expiry covers every
-- token drawn from it since its last seed or raise, and the token asked for is among them.
-- Reads the counter: the callers end with a read of their lock key, after this.
local function raiseFence(key, token)
  local current = tonumber(redis.call('GET', key) or '0')
  local raised = tonumber(token)
  if current < raised then
    local now = redis.call('TIME')
    local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
    local expiry = math.max(math.floor(raised / 1000) + 1, ms) + IDLE_MS
    redis.call('SET', key, token, 'PXAT', string.format('%.0f', expiry))
  end
end
