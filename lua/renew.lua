-- idem: extend the owner's lease (the watchdog calls this while work runs).
-- KEYS[1] record hash
-- ARGV[1] owner token, ARGV[2] lease in ms, ARGV[3] keep-past-lease in ms
-- Replies: now_ms, an integer: renewed to now_ms + lease | {'LEASE_LOST', state_or_missing, now_ms}
local rec = KEYS[1]
local token = ARGV[1]
local lease, keep = tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local h = redis.pcall('HMGET', rec, 'state', 'token')
if h.err or h[1] ~= 'STARTED' or h[2] ~= token then
  return {'LEASE_LOST', h.err and 'not a hash' or h[1] or 'missing', now}
end
redis.call('HSET', rec, 'lease_until_ms', now + lease)
redis.call('PEXPIRE', rec, lease + keep, 'GT')
return now
