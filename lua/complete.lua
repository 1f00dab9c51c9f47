-- idem: store the result of the work and move STARTED -> COMPLETED, for the current owner only.
-- KEYS[1] record hash (the only key an owner script touches)
-- ARGV[1] owner token, ARGV[2] response, ARGV[3] retention in ms
-- Replies: 0: stored (as a retry of a complete whose reply was lost is) |
--          {'LEASE_LOST', state_or_missing, 0}
-- Half of every first execution's round trips, so it takes what it needs and no more: one key
-- (each declared key costs Redis ~2 000 instructions; tools/script-costs.sh), and no clock. The
-- record keeps its retention as given (retention_ms) and its TTL is that retention counted from
-- the moment it completed, so when it finished is now + PTTL - retention_ms, on the server's clock
-- (what idem's readers show). TIME, the string of a time and a field for it cost Redis ~10 800
-- instructions, a sixth of this request. The response cap is the Store's (it refuses a larger
-- response before sending). Success is one value: a table reply costs Redis ~4 600 instructions more.
local call = redis.call
local rec, token = KEYS[1], ARGV[1]

local h = redis.pcall('HMGET', rec, 'state', 'token')
if h.err or not h[1] then
  return {'LEASE_LOST', h.err and 'not a hash' or 'missing', 0}
end
local state = h[1]
if h[2] ~= token then
  return {'LEASE_LOST', state, 0}
end
if state == 'COMPLETED' then
  return 0 -- a retry of a complete whose reply was lost
end
if state ~= 'STARTED' then
  return {'LEASE_LOST', state, 0}
end
call('HSET', rec, 'state', 'COMPLETED', 'response', ARGV[2], 'retention_ms', ARGV[3])
call('PEXPIRE', rec, ARGV[3])
return 0
