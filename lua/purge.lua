-- idem: an operator deletes a record (any type) so the id can run again. The meta key keeps the
-- record's last fencing number, so fences keep increasing after the purge whatever the clocks do,
-- and records who purged, when and why.
-- KEYS[1] record hash, KEYS[2] meta hash
-- ARGV[1] who, ARGV[2] reason, ARGV[3] how long the meta key is kept at least, in ms
-- Replies: {'OK', previous_state_or_type, now_ms} | {'NOT_FOUND', '', now_ms}
local rec, meta = KEYS[1], KEYS[2]
local who, reason = ARGV[1], ARGV[2]
local keepMeta = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local ktype = redis.call('TYPE', rec)['ok']
if ktype == 'none' then
  return {'NOT_FOUND', '', now}
end
local prev = ktype
if ktype == 'hash' then
  local h = redis.call('HMGET', rec, 'state', 'fence')
  prev = h[1] or 'hash'
  local fence = tonumber(h[2])
  if fence and fence > (tonumber(redis.call('HGET', meta, 'fence')) or 0) then
    redis.call('HSET', meta, 'fence', h[2])
  end
end
redis.call('DEL', rec)
redis.call('HSET', meta, 'last_op', 'purge', 'last_op_by', who, 'last_op_at_ms', now,
           'last_op_reason', reason, 'last_op_prev_state', prev)
if redis.call('PTTL', meta) < keepMeta then
  redis.call('PEXPIRE', meta, keepMeta)
end
return {'OK', prev, now}
