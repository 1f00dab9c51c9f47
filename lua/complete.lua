-- idem: store the result of the work and move STARTED -> COMPLETED, for the current owner only;
-- one id or many in one call.
-- For each id i (1-based): KEYS[i] record hash (the only key an owner script touches),
-- ARGV[3i-2] owner token, ARGV[3i-1] response, ARGV[3i] retention in ms
-- Replies, per id: 0: stored (as a retry of a complete whose reply was lost is) |
--                  {'LEASE_LOST', state_or_missing, 0}
-- one id: its reply; many: a table of them, in order.
-- Half of every first execution's round trips, so it takes what it needs and no more: one key
-- (each declared key costs Redis ~2 000 instructions; tools/script-costs.sh), and no clock. The
-- record keeps its retention as given (retention_ms) and its TTL is that retention counted from
-- the moment it completed, so when it finished is now + PTTL - retention_ms, on the server's clock
-- (what idem's readers show). TIME, the string of a time and a field for it cost Redis ~10 800
-- instructions, a sixth of this request. The response cap is the Store's (it refuses a larger
-- response before sending). Success is one value: a table reply costs Redis ~4 600 instructions
-- more. Many ids per call (completions queued together) spare the per-command cost of EVALSHA; on
-- a Redis Cluster the caller sends only ids of one hash slot together.
local call, pcall, keys, argv = redis.call, redis.pcall, KEYS, ARGV
local n = #keys
local out = n > 1 and {} or nil
for i = 1, n do
  local rec, token = keys[i], argv[3 * i - 2]
  local r = 0
  local h = pcall('HMGET', rec, 'state', 'token')
  local state = not h.err and h[1]
  if not state then
    r = {'LEASE_LOST', h.err and 'not a hash' or 'missing', 0}
  elseif h[2] ~= token then
    r = {'LEASE_LOST', state, 0}
  elseif state == 'STARTED' then
    local retention = argv[3 * i]
    call('HSET', rec, 'state', 'COMPLETED', 'response', argv[3 * i - 1], 'retention_ms', retention)
    call('PEXPIRE', rec, retention)
  elseif state ~= 'COMPLETED' then -- COMPLETED: a retry of a complete whose reply was lost
    r = {'LEASE_LOST', state, 0}
  end
  if n == 1 then
    return r
  end
  out[i] = r
end
return out
