local SCALE = 17592186044416
local RANK = 281474976710656
local function ready(P, key)
  local old = redis.call('HGET', P..':hb', key)
  if old == 'L' then return end
  local head = redis.call('ZRANGE', P..':q:'..key, 0, 0, 'WITHSCORES')
  if #head == 0 then
    if old then redis.call('ZREM', P..':r:'..old, key); redis.call('HDEL', P..':hb', key) end
    return
  end
  local band = math.floor(tonumber(head[2]) / SCALE) % 16
  if old and tonumber(old) ~= band then redis.call('ZREM', P..':r:'..old, key) end
  local at = tonumber(redis.call('HGET', P..':na', key) or '0')
  redis.call('ZADD', P..':r:'..band, at, key)
  redis.call('HSET', P..':hb', key, band)
end
local function requeue(P, id, key)
  local blob = redis.call('HGET', P..':e', id)
  if blob then
    redis.call('ZADD', P..':q:'..key,
               string.byte(blob, 2) * RANK + string.byte(blob, 1) * SCALE + tonumber(id), id)
  end
end
local function unlock(P, key)
  redis.call('ZREM', P..':lk', key); redis.call('HDEL', P..':lo', key)
  redis.call('HDEL', P..':hb', key)
end
