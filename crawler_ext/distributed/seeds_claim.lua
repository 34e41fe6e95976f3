local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
for _, dead in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
  local seeds = redis.call('HGET', KEYS[2], dead)
  if seeds then
    for url in string.gmatch(seeds, '[^\n]+') do redis.call('RPUSH', KEYS[1], url) end
  end
  redis.call('HDEL', KEYS[2], dead); redis.call('ZREM', KEYS[3], dead)
end
local popped = {}
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 then
  popped = redis.call('LPOP', KEYS[1], tonumber(ARGV[1])) or {}
  if #popped > 0 then
    redis.call('HSET', KEYS[2], ARGV[2], table.concat(popped, '\n'))
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[2])
  end
end
return {popped, redis.call('LLEN', KEYS[1]), redis.call('ZCARD', KEYS[3])}
