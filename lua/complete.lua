-- idem: store the result of the work and move STARTED -> COMPLETED, for the current owner only.
-- KEYS[1] record hash (the only key an owner script touches)
-- ARGV[1] owner token, ARGV[2] response, ARGV[3] retention in ms
-- Replies: now_ms alone: stored (as every owner script says OK; here as the digits cut from TIME,
--          not a number: converting costs Redis ~900 instructions) |
--          {'LEASE_LOST', state_or_missing, now_ms}
-- Half of every first execution's round trips, so it takes what it needs and no more: one key
-- (each declared key costs Redis ~2 000 instructions; tools/script-costs.sh). The response cap is
-- the Store's (it refuses a larger response before sending): a cap passed here by the caller would
-- only repeat the caller's own check. Strings from the client and from TIME go to redis.call as
-- they are (a Lua number would be printed with snprintf per argument), and success is one value
-- (a table reply costs Redis ~4 600 instructions more).
local call = redis.call
local rec, token, response = KEYS[1], ARGV[1], ARGV[2]
local t = call('TIME')
local sec, us = t[1], t[2] -- strings; microseconds not zero-padded
if #us < 6 then
  us = ('00000' .. us):sub(-6)
end
local now = sec .. us:sub(1, 3) -- server time in ms

local h = redis.pcall('HMGET', rec, 'state', 'token')
if h.err or not h[1] then
  return {'LEASE_LOST', h.err and 'not a hash' or 'missing', now}
end
local state = h[1]
if h[2] ~= token then
  return {'LEASE_LOST', state, now}
end
if state == 'COMPLETED' then
  return now -- a retry of a complete whose reply was lost
end
if state ~= 'STARTED' then
  return {'LEASE_LOST', state, now}
end
call('HSET', rec, 'state', 'COMPLETED', 'response', response, 'finished_ms', now)
call('PEXPIRE', rec, ARGV[3])
return now
