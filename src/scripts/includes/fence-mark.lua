-- Fence marks (docs/safety.md, "Counters that expire"). A fencing counter expires once its name
-- goes idle, and its re-seed cannot trust the server's clock alone: a clock that stepped back
-- would seed it below tokens already handed out. A fence mark, one key per prefix and hash slot
-- (`<prefix>:fence-mark{<tag>}`, src/base/fence-mark.ts) without a TTL, stays above every token
-- any counter of its slot ever handed out: a seed or a raise to `v` sets it to v + FENCE_STEP,
-- and a counter reaching a multiple `m` of FENCE_STEP sets it to m + FENCE_STEP (a counter
-- counts one by one from its seed or raise, so it reaches the next multiple before it passes
-- the mark). A re-seed at max(server time, mark) is then above every token of the old counter.
-- FENCE_STEP trades one GET and SET per FENCE_STEP tokens of a counter against how far seeds
-- may land ahead of the clock: a slot re-seeded more often than once per FENCE_STEP us pushes
-- its seeds FENCE_STEP past each other rather than to the clock.
local FENCE_STEP = 1000
-- FENCE_MARK: the fence mark of the counters the script draws from or raises (a KEYS entry: the
-- counters of one name live in one slot). The script sets it before it draws, and a multiLock
-- before each name's draw. A variable rather than an argument, so that the grant includes keep
-- calling nextFence(fenceKey); no function or table either: every acquisition runs this.
local FENCE_MARK
