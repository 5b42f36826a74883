-- A candidate that waited gave up (timeout, abort, close): forget its record among the candidates.
-- (A term an attempt of it won meanwhile is given back by the engine, as for every wait.)
-- KEYS[1]  candidates (see election-campaign.lua)
-- ARGV[1]  the candidate's token
-- Returns  0
redis.call('ZREM', KEYS[1], ARGV[1])
return 0
