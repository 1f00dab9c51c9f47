-- idem: the one way an operator removes a key, whatever started it (idemctl purge ID, --key,
-- --state, --stale, --pattern; the console; a foreign lock released by force-fail). It removes the
-- key only if it is still what the operator saw, keeps an idem record's last fencing number in its
-- meta key (fences keep rising after the purge whatever the clocks do), and records who, when, why,
-- from where and what the key was - in the meta key (idem records) and as an entry of the
-- namespace's audit stream - atomically with the change.
-- KEYS[1] the key; KEYS[2] its meta key when ARGV[11] is '1'; then the audit stream when ARGV[12]
--         is not '0' (it shares the node: not on a Redis Cluster, where the caller adds the entry)
-- ARGV[1] who  ARGV[2] why  ARGV[3] from where (tool and host)  ARGV[4] meta key kept at least, ms
-- ARGV[5] expected type ('' = whatever it is now: a purge by id)
-- ARGV[6] hash: expected state (or foreign 'status'; '*' = any) | string: SHA1 hex of its first
--         ARGV[9] bytes ('' = only check the type)
-- ARGV[7] hash: expected owner token ('' = none)  ARGV[8] hash: expected lease_until_ms ('' = none)
-- ARGV[9] string: how many bytes ARGV[6] hashes  ARGV[10] string: expected length
-- ARGV[11] '1': KEYS[2] is the meta key  ARGV[12] the audit stream's MAXLEN ('0': no stream here)
-- ARGV[13] the audit stream's TTL, ms (every key idem writes expires; each entry extends it)
-- ARGV[14] string: how many of its last bytes ARGV[6] hashes too (read in part; '' or '0': none)
-- ARGV[15] hash: the SHA1 hex of the fields ARGV[16..] as they were read: for each, in order,
--          '+<length>:<value>' or '-' when absent ('' = compare state, token and lease only).
--          A foreign lock's lease under its own name (lock_expiry, expiration) renewed meanwhile
--          makes the key changed, as a renewed lease_until_ms does.
-- Nothing is written when the audit stream's key holds something else (no half-done purge).
-- Replies: {'OK', what it was, now_ms} | {'NOT_FOUND', '', now_ms} | {'CHANGED', what it is, now_ms}
local key = KEYS[1]
local hasMeta = ARGV[11] == '1'
local meta = hasMeta and KEYS[2] or nil
local stream = ARGV[12] ~= '0' and KEYS[hasMeta and 3 or 2] or nil
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

if stream then
  local st = redis.call('TYPE', stream)['ok']
  if st ~= 'stream' and st ~= 'none' then
    return redis.error_reply('ERR idem: ' .. stream .. ' holds a ' .. st .. ', not the audit stream: nothing purged')
  end
end
local ty = redis.call('TYPE', key)['ok']
if ty == 'none' then
  return {'NOT_FOUND', '', now}
end
local was = ty
local h
if ty == 'hash' then
  h = redis.call('HMGET', key, 'state', 'status', 'token', 'lease_until_ms', 'fence')
  was = h[1] or h[2] or 'hash'
end
if ARGV[5] ~= '' then
  if ty ~= ARGV[5] then
    return {'CHANGED', was, now}
  end
  if ty == 'hash' then
    if (ARGV[6] ~= '*' and (h[1] or h[2] or '') ~= ARGV[6]) or (h[3] or '') ~= ARGV[7]
       or (h[4] or '') ~= ARGV[8] then
      return {'CHANGED', was, now}
    end
    if (ARGV[15] or '') ~= '' then
      local names = {}
      for i = 16, #ARGV do
        names[#names + 1] = ARGV[i]
      end
      local parts = {}
      for from = 1, #names, 1000 do -- (unpack has a limit: a hash read whole may have many fields)
        local to = math.min(from + 999, #names)
        local v = redis.call('HMGET', key, unpack(names, from, to))
        for i = from, to do
          local x = v[i - from + 1]
          parts[i] = x and ('+' .. #x .. ':' .. x) or '-'
        end
      end
      if redis.sha1hex(table.concat(parts)) ~= ARGV[15] then
        return {'CHANGED', was, now}
      end
    end
  elseif ty == 'string' and ARGV[6] ~= '' then
    local n, m = tonumber(ARGV[9]), tonumber(ARGV[14] or '0') or 0
    local bytes = redis.call('GETRANGE', key, 0, n - 1)
    if m > 0 then
      bytes = bytes .. redis.call('GETRANGE', key, -m, -1)
    end
    if redis.call('STRLEN', key) ~= tonumber(ARGV[10]) or redis.sha1hex(bytes) ~= ARGV[6] then
      return {'CHANGED', was, now}
    end
  end
end
if meta then
  local fence = h and tonumber(h[5])
  if fence and fence > (tonumber(redis.call('HGET', meta, 'fence')) or 0) then
    redis.call('HSET', meta, 'fence', h[5])
  end
  redis.call('HSET', meta, 'last_op', 'purge', 'last_op_by', ARGV[1], 'last_op_at_ms', now,
             'last_op_reason', ARGV[2], 'last_op_via', ARGV[3], 'last_op_prev_state', was)
  if redis.call('PTTL', meta) < tonumber(ARGV[4]) then
    redis.call('PEXPIRE', meta, ARGV[4])
  end
end
redis.call('UNLINK', key)
if stream then
  redis.call('XADD', stream, 'MAXLEN', '~', ARGV[12], '*', 'action', 'purge', 'key', key, 'by', ARGV[1],
             'why', ARGV[2], 'via', ARGV[3], 'was', was)
  redis.call('PEXPIRE', stream, ARGV[13])
end
return {'OK', was, now}
