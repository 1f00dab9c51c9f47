-- idem: store the result of the work and move STARTED -> COMPLETED, for the current owner only.
-- KEYS[1] record hash, KEYS[2] meta hash (unused; declared so that every script names both keys)
-- ARGV[1] owner token, ARGV[2] response, ARGV[3] retention in ms, ARGV[4] response cap in bytes
-- Replies: {'OK', fence, now_ms} | {'LEASE_LOST', state_or_missing, now_ms} | {'TOO_LARGE', cap, now_ms}
local rec = KEYS[1]
local token, response = ARGV[1], ARGV[2]
local retention, cap = tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local h = redis.pcall('HMGET', rec, 'state', 'token', 'fence')
if h.err or not h[1] then
  return {'LEASE_LOST', h.err and 'not a hash' or 'missing', now}
end
if h[2] ~= token then
  return {'LEASE_LOST', h[1], now}
end
if h[1] == 'COMPLETED' then
  -- a retry of a complete whose reply was lost
  return {'OK', tonumber(h[3]) or 0, now}
end
if h[1] ~= 'STARTED' then
  return {'LEASE_LOST', h[1], now}
end
if #response > cap then
  return {'TOO_LARGE', cap, now}
end
redis.call('HSET', rec, 'state', 'COMPLETED', 'response', response, 'finished_ms', string.format('%d', now))
redis.call('PEXPIRE', rec, retention)
return {'OK', tonumber(h[3]) or 0, now}
