--- @include "idle"
--- @include "fence-mark"
-- raiseFence(key, token): quorum mode: raise the fencing counter at `key` to `token` (a decimal
-- string, drawn on another node, by another clock) unless it already counts that far, and this
-- node's fence mark of its slot to token + FENCE_STEP, as a seed would (includes/fence-mark.lua):
-- a later re-seed here lands above the raised counter's tokens whatever this node's clock does.
-- The script sets FENCE_MARK first. The raised counter expires
-- IDLE_MS after the later of the token's time and now: at max(floor(token / 1000) + 1, now) +
-- IDLE_MS (server ms), so that, should the mark be lost, this node's clock reads past token +
-- IDLE_MS * 1000 us before a re-seed, as after nextFence's seed. A token from a clock behind this
-- one gets IDLE_MS from now, as a seed would: an expiry already past would leave no counter, and
-- servers differ in whether such a SET disarms the tracking the GET below armed (Valkey does not).
-- A counter that already counts that far keeps its value and its expiry: the mark already covers
-- every token drawn from it, and the token asked for is among them.
-- Reads the counter: the callers end with a read of their lock key, after this.
local function raiseFence(key, token)
  local current = tonumber(redis.call('GET', key) or '0')
  local raised = tonumber(token)
  if current < raised then
    local now = redis.call('TIME')
    local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
    local expiry = math.max(math.floor(raised / 1000) + 1, ms) + IDLE_MS
    redis.call('SET', key, token, 'PXAT', string.format('%.0f', expiry))
    if tonumber(redis.call('GET', FENCE_MARK) or '0') < raised + FENCE_STEP then
      redis.call('SET', FENCE_MARK, string.format('%.0f', raised + FENCE_STEP))
    end
  end
end
