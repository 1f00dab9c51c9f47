-- idem: unlink a key only if it is still what the operator saw (bulk purge by state or pattern).
-- KEYS[1] the key
-- ARGV[1] expected type ('hash', 'string', 'list', ...)
-- ARGV[2] hash: expected state (or foreign 'status'; '*' = any) | string: SHA1 hex of its first
--         ARGV[5] bytes ('' = only check the type)
-- ARGV[3] hash: expected owner token ('' = none)
-- ARGV[4] hash: expected lease_until_ms ('' = none)
-- ARGV[5] string: how many bytes ARGV[2] hashes (a large value is never read whole)
-- ARGV[6] string: expected length
-- Reply: 1 when unlinked, 0 when the key changed (renewed, completed, rewritten) or is gone.
local key = KEYS[1]
local ty = redis.call('TYPE', key)['ok']
if ty ~= ARGV[1] then
  return 0
end
if ty == 'hash' then
  local h = redis.call('HMGET', key, 'state', 'status', 'token', 'lease_until_ms')
  if (ARGV[2] ~= '*' and (h[1] or h[2] or '') ~= ARGV[2]) or (h[3] or '') ~= ARGV[3]
     or (h[4] or '') ~= ARGV[4] then
    return 0
  end
elseif ty == 'string' and ARGV[2] ~= '' then
  local n = tonumber(ARGV[5])
  if redis.call('STRLEN', key) ~= tonumber(ARGV[6]) or
     redis.sha1hex(redis.call('GETRANGE', key, 0, n - 1)) ~= ARGV[2] then
    return 0
  end
end
redis.call('UNLINK', key)
return 1
