-- IDLE_MS: how long a name's bookkeeping outlives its last use, in ms. Every key leasehold writes
-- expires (DESIGN.md principle 12): lock keys and sorted sets with their leases' TTLs, and the
-- keys that would otherwise outlive every lease (fencing counters, arrival and release counters,
-- the election's change log) IDLE_MS after the name goes idle. Correctness does not depend on
-- the value (docs/safety.md, "Counters that expire"); memory does: 1,000 new names a second keep
-- about IDLE_MS / 1000 * 1,000 such keys alive. Tests swap this line for a shorter time.
local IDLE_MS = 60000
