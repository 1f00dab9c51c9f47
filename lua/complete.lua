-- idem: store the result of the work and move STARTED -> COMPLETED, for the current owner only.
-- KEYS[1] record hash, KEYS[2] meta hash (unused; declared so that every script names both keys)
-- ARGV[1] owner token, ARGV[2] response, ARGV[3] retention in ms, ARGV[4] response cap in bytes
-- Replies: {'OK', fence, now_ms} | {'LEASE_LOST', state_or_missing, now_ms} | {'TOO_LARGE', cap, now_ms}
-- Half of every first execution's round trips: strings from the client and from TIME go to
-- redis.call as they are (a Lua number would be printed with snprintf per argument).
local call = redis.call
local rec, token, response = KEYS[1], ARGV[1], ARGV[2]
local t = call('TIME') -- seconds, microseconds (not zero-padded)
local nowS = t[1] .. ('00000' .. t[2]):sub(-6, -4) -- server time in ms
local now = nowS + 0

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
if #response > ARGV[4] + 0 then
  return {'TOO_LARGE', ARGV[4] + 0, now}
end
call('HSET', rec, 'state', 'COMPLETED', 'response', response, 'finished_ms', nowS)
call('PEXPIRE', rec, ARGV[3])
return {'OK', tonumber(h[3]) or 0, now}
