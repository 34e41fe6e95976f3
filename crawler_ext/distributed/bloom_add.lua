local k = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV, k do
  local new = 0
  for j = i, i + k - 1 do
    if redis.call('SETBIT', KEYS[1], ARGV[j], 1) == 0 then new = 1 end
  end
  out[#out + 1] = new
end
return out
