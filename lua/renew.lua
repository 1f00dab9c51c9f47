-- idem: extend the owner's lease (the watchdog calls this while work runs).
-- KEYS[1] record hash, KEYS[2] meta hash
-- ARGV[1] owner token, ARGV[2] lease in ms, ARGV[3] keep-past-lease in ms
-- Replies: {'OK', lease_until_ms, now_ms} | {'LEASE_LOST', state_or_missing, now_ms}
local rec, meta = KEYS[1], KEYS[2]
local token = ARGV[1]
local lease, keep = tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

if redis.call('TYPE', rec)['ok'] ~= 'hash' then
  return {'LEASE_LOST', 'missing', now}
end
local h = redis.call('HMGET', rec, 'state', 'token')
if h[1] ~= 'STARTED' or h[2] ~= token then
  return {'LEASE_LOST', h[1] or 'missing', now}
end
redis.call('HSET', rec, 'lease_until_ms', now + lease, 'updated_ms', now)
if redis.call('PTTL', rec) < lease + keep then
  redis.call('PEXPIRE', rec, lease + keep)
end
if redis.call('PTTL', meta) < lease + keep then
  redis.call('PEXPIRE', meta, lease + keep)
end
return {'OK', now + lease, now}
