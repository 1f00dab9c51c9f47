-- idem: an operator marks a record FAILED without its token (a stuck or poisoned id).
-- KEYS[1] record hash, KEYS[2] meta hash (unused), KEYS[3] the namespace's audit stream when
-- ARGV[6] is not '0' (it shares the node: not on a Redis Cluster, where the caller adds the entry)
-- ARGV[1] reason, ARGV[2] 'terminal' or 'retryable', ARGV[3] who, ARGV[4] retention in ms,
-- ARGV[5] from where (tool and host), ARGV[6] the audit stream's MAXLEN ('0': no stream here),
-- ARGV[7] the audit stream's TTL in ms
-- Replies: {'OK', previous_state, now_ms} | {'NOT_FOUND', '', now_ms}
--          | {'REFUSED', why, now_ms}   (COMPLETED records keep their result: purge them instead)
local rec, meta = KEYS[1], KEYS[2]
local reason, failure, who = ARGV[1], ARGV[2], ARGV[3]
local retention = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

if (ARGV[6] or '0') ~= '0' then
  local st = redis.call('TYPE', KEYS[3])['ok']
  if st ~= 'stream' and st ~= 'none' then
    return redis.error_reply('ERR idem: ' .. KEYS[3] .. ' holds a ' .. st .. ', not the audit stream: nothing done')
  end
end
local ktype = redis.call('TYPE', rec)['ok']
if ktype == 'none' then
  return {'NOT_FOUND', '', now}
end
if ktype ~= 'hash' then
  return {'REFUSED', 'key holds a ' .. ktype .. ', not an idem record (purge it instead)', now}
end
local state = redis.call('HGET', rec, 'state')
if state == 'COMPLETED' then
  return {'REFUSED', 'record is COMPLETED and keeps its result; purge it to let the id run again', now}
end
if state ~= 'STARTED' and state ~= 'FAILED' then
  return {'REFUSED', 'hash has no idem state field (purge it instead)', now}
end
-- idem's STARTED has an owner token and a lease (a deadline, or a fence and a lease length): a
-- hash without them is another writer's lock, whose owner would never hear of a FAILED
local own = state == 'STARTED' and redis.call('HMGET', rec, 'token', 'lease_until_ms', 'lease_ms')
if own and not (own[1] and (own[2] or own[3])) then
  return {'REFUSED', 'a STARTED hash without an idem owner token and lease: not an idem record (inspect it)', now}
end
-- clearing the token makes the current owner's complete/renew answer "lease lost"
redis.call('HDEL', rec, 'token')
redis.call('HSET', rec, 'state', 'FAILED', 'failure', failure, 'error', 'forced: ' .. reason,
           'finished_ms', now, 'op', 'force-fail', 'op_by', who, 'op_at_ms', now, 'op_reason', reason,
           'op_via', ARGV[5] or '')
redis.call('PEXPIRE', rec, retention)
if (ARGV[6] or '0') ~= '0' then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[6], '*', 'action', 'force-fail ' .. failure, 'key', rec,
             'by', who, 'why', reason, 'via', ARGV[5], 'was', state)
  redis.call('PEXPIRE', KEYS[3], ARGV[7])
end
return {'OK', state, now}
