-- idem: the owner reports that the work failed.
-- KEYS[1] record hash
-- ARGV[1] owner token
-- ARGV[2] policy: 'release' (delete: the next delivery retries), 'retryable' (keep FAILED, next
--         acquire retries), 'terminal' (keep FAILED, duplicates get the failure back)
-- ARGV[3] error text, ARGV[4] retention in ms for a kept failure
-- Replies: now_ms, an integer: done | {'LEASE_LOST', state_or_missing, now_ms}
local rec = KEYS[1]
local token, policy, err = ARGV[1], ARGV[2], ARGV[3]
local retention = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local h = redis.pcall('HMGET', rec, 'state', 'token')
if h.err or h[1] ~= 'STARTED' or h[2] ~= token then
  return {'LEASE_LOST', h.err and 'not a hash' or h[1] or 'missing', now}
end
if policy == 'release' then
  redis.call('DEL', rec)
  return now
end
if policy ~= 'retryable' and policy ~= 'terminal' then
  return redis.error_reply('ERR idem: unknown failure policy ' .. policy)
end
redis.call('HSET', rec, 'state', 'FAILED', 'failure', policy, 'error', err, 'finished_ms', now)
redis.call('PEXPIRE', rec, retention)
return now
