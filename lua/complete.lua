-- idem: store the result of the work and move STARTED -> COMPLETED, for the current owner only.
-- KEYS[1] record hash (the only key an owner script touches; each key declared costs Redis ~2 500
-- instructions, a twentieth of this script's request)
-- ARGV[1] owner token, ARGV[2] response, ARGV[3] retention in ms, ARGV[4] response cap in bytes
-- Replies: now_ms alone: stored (as every owner script says OK; here as the digits cut from TIME,
--          not a number: converting costs Redis ~700 instructions) |
--          {'LEASE_LOST', state_or_missing, now_ms} | {'TOO_LARGE', cap, now_ms}
-- Half of every first execution's round trips: strings from the client and from TIME go to
-- redis.call as they are (a Lua number would be printed with snprintf per argument), and success
-- is one value (a table reply costs Redis ~5 000 instructions more).
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
if #response > ARGV[4] + 0 then
  return {'TOO_LARGE', ARGV[4] + 0, now}
end
call('HSET', rec, 'state', 'COMPLETED', 'response', response, 'finished_ms', now)
call('PEXPIRE', rec, ARGV[3])
return now
