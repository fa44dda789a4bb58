package redis

import goredis "github.com/redis/go-redis/v9"

// The Lua scripts below run atomically on the Redis server. Every one of them
// touches the keys of a single thread only (KEYS[1] names one of them, and
// the others it builds from the thread's key base share its {thread} hash
// tag), so they run unchanged on Redis Cluster.
//
// Lua compares strings with strcoll, which depends on the server's locale,
// so the scripts compare checkpoint IDs byte-wise with lt and decimal
// versions with numlt instead of with < on strings.

// luaLib is prepended to every script.
const luaLib = `
local function lt(a, b)
  if a == b then return false end
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- numlt compares two canonical decimal strings (no leading zeros).
local function numlt(a, b)
  if #a ~= #b then return #a < #b end
  return lt(a, b)
end

-- versions parses a checkpoint's "v" field (see encodeVersions) into a flat
-- list key1, version1, key2, version2, ...; it stops at the first malformed
-- entry, leaving the strict check and the error to the Go side.
local function versions(s)
  local out, pos, n = {}, 1, #s
  while pos <= n do
    local c = string.find(s, ':', pos, true)
    if not c then break end
    local l = tonumber(string.sub(s, pos, c - 1))
    if not l then break end
    local e = string.find(s, '\n', c + l + 1, true)
    if not e then break end
    local v = string.sub(s, c + l + 1, e - 1)
    if not string.match(v, '^%d+$') then break end
    out[#out + 1] = string.sub(s, c + 1, c + l)
    out[#out + 1] = v
    pos = e + 1
  end
  return out
end

-- base returns the version a blob value (see encodeBlob) is a delta on, or
-- nil when the blob ends its chain (a full blob, or a malformed one).
local function base(val, v)
  local b = string.match(val, '^D(%d+)[,\n]')
  if b and numlt(b, v) then return b end
  return nil
end

local function unlink(keys)
  for i = 1, #keys, 500 do
    redis.call('UNLINK', unpack(keys, i, math.min(i + 499, #keys)))
  end
end

-- collect deletes the blobs of a namespace that none of the kept
-- checkpoints needs, marking each chain as far as it goes (a broken chain
-- is the readers' to report).
local function collect(blobsKey, cpPrefix, kept)
  local needed = {}
  for _, id in ipairs(kept) do
    local kv = versions(redis.call('HGET', cpPrefix .. id, 'v') or '')
    for i = 1, #kv, 2 do
      local key, v = kv[i], kv[i + 1]
      while v do
        local f = key .. '\0' .. v
        if needed[f] then break end
        local val = redis.call('HGET', blobsKey, f)
        if not val then break end
        needed[f] = true
        v = base(val, v)
      end
    end
  end
  local gone = {}
  for _, f in ipairs(redis.call('HKEYS', blobsKey)) do
    if not needed[f] then gone[#gone + 1] = f end
  end
  for j = 1, #gone, 500 do
    redis.call('HDEL', blobsKey, unpack(gone, j, math.min(j + 499, #gone)))
  end
end
`

// readScript returns checkpoints with their blob chains.
//
// KEYS[1] ids zset, KEYS[2] blobs hash. ARGV[1] the namespace's checkpoint
// key prefix (a checkpoint's key is ARGV[1]..id), ARGV[2] "get" or "list".
// For "get", ARGV[3] is the checkpoint ID, "" for the latest. For "list",
// ARGV[3] is an exclusive upper bound ("" for none) and ARGV[4] the most
// checkpoints to return, newest first.
//
// The reply is {tuples, blobs}: blobs holds each blob value once; a tuple is
// {id, HGETALL of the checkpoint, chains}, chains being key1, {indexes into
// blobs, 0-based, newest first}, key2, {...}, ...
var readScript = goredis.NewScript(luaLib + `
local ids
if ARGV[2] == 'get' then
  if ARGV[3] == '' then
    ids = redis.call('ZRANGE', KEYS[1], -1, -1)
  elseif redis.call('ZSCORE', KEYS[1], ARGV[3]) then
    ids = {ARGV[3]}
  else
    ids = {}
  end
else
  local max = '+'
  if ARGV[3] ~= '' then max = '(' .. ARGV[3] end
  ids = redis.call('ZRANGE', KEYS[1], max, '-', 'BYLEX', 'REV', 'LIMIT', 0, ARGV[4])
end
local blobs, index, tuples = {}, {}, {}
for _, id in ipairs(ids) do
  local h = redis.call('HGETALL', ARGV[1] .. id)
  local vs = ''
  for i = 1, #h, 2 do
    if h[i] == 'v' then vs = h[i + 1] break end
  end
  local kv = versions(vs)
  local chains = {}
  for i = 1, #kv, 2 do
    local key, v = kv[i], kv[i + 1]
    local idx = {}
    while v do
      local f = key .. '\0' .. v
      local n = index[f]
      if not n then
        local val = redis.call('HGET', KEYS[2], f)
        if not val then break end
        blobs[#blobs + 1] = val
        n = #blobs
        index[f] = n
      end
      idx[#idx + 1] = n - 1
      v = base(blobs[n], v)
    end
    chains[#chains + 1] = key
    chains[#chains + 1] = idx
  end
  tuples[#tuples + 1] = {id, h, chains}
end
return {tuples, blobs}
`)

// putScript stores a checkpoint after checking the writer's view of the
// latest one, the ID order and that no stored blob is changed.
//
// KEYS[1] namespaces set, KEYS[2] ids zset, KEYS[3] blobs hash, KEYS[4] the
// checkpoint's hash. ARGV[1] escaped namespace, ARGV[2] the latest ID as the
// writer read it, ARGV[3] the new ID, ARGV[4] checkpoint JSON, ARGV[5]
// metadata JSON, ARGV[6] versions, ARGV[7] created (timeKey), ARGV[8] the
// record's checksum (recordSum), ARGV[9..] blob field, value pairs. A blob
// stored before checksums equals a new one whose header differs only by
// its checksum.
//
// Replies {"ok"}, {"conflict", latest}, {"exists"}, {"order", latest} or
// {"blob", i} (the i-th blob pair, 0-based, differs from the stored one).
var putScript = goredis.NewScript(luaLib + `
local latest = redis.call('ZRANGE', KEYS[2], -1, -1)[1] or ''
if latest ~= ARGV[2] then return {'conflict', latest} end
local id = ARGV[3]
if redis.call('ZSCORE', KEYS[2], id) or redis.call('EXISTS', KEYS[4]) == 1 then return {'exists'} end
if latest ~= '' and lt(id, latest) then return {'order', latest} end
for i = 9, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[3], ARGV[i])
  if old and old ~= ARGV[i + 1] then
    local plain = string.gsub(ARGV[i + 1], '^([FD]%d+),%x+\n', '%1\n', 1)
    if old ~= plain then return {'blob', (i - 9) / 2} end
  end
end
for i = 9, #ARGV, 2 do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
end
redis.call('HSET', KEYS[4], 'cp', ARGV[4], 'md', ARGV[5], 'v', ARGV[6], 't', ARGV[7], 's', ARGV[8])
redis.call('ZADD', KEYS[2], 0, id)
redis.call('SADD', KEYS[1], ARGV[1])
return {'ok'}
`)

// putWritesScript replaces one task's pending writes on a checkpoint.
//
// KEYS[1] ids zset, KEYS[2] the checkpoint's hash. ARGV[1] checkpoint ID,
// ARGV[2] the task's field, ARGV[3] the writes JSON, "" to remove them.
// Replies 1, or 0 when the checkpoint does not exist.
var putWritesScript = goredis.NewScript(`
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[2], ARGV[2])
else
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
end
return 1
`)

// deleteScript removes every key of a thread.
//
// KEYS[1] the thread's namespaces set. ARGV[1] the thread's key base.
// Replies the number of checkpoints removed.
var deleteScript = goredis.NewScript(luaLib + `
local removed = 0
for _, ns in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local idsKey = ARGV[1] .. 'ids:' .. ns
  local keys = {idsKey, ARGV[1] .. 'blobs:' .. ns}
  for _, id in ipairs(redis.call('ZRANGE', idsKey, 0, -1)) do
    keys[#keys + 1] = ARGV[1] .. 'cp:' .. ns .. ':' .. id
    removed = removed + 1
  end
  unlink(keys)
end
redis.call('UNLINK', KEYS[1])
return removed
`)

// dumpScript reads a whole thread for CopyThread.
//
// KEYS[1] the thread's namespaces set. ARGV[1] the thread's key base.
// Replies one entry per namespace: {escaped namespace, {ids ascending},
// HGETALL of the blobs hash, HGETALL of each checkpoint in id order...}.
var dumpScript = goredis.NewScript(`
local out = {}
for _, ns in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local ids = redis.call('ZRANGE', ARGV[1] .. 'ids:' .. ns, 0, -1)
  local item = {ns, ids, redis.call('HGETALL', ARGV[1] .. 'blobs:' .. ns)}
  for _, id in ipairs(ids) do
    item[#item + 1] = redis.call('HGETALL', ARGV[1] .. 'cp:' .. ns .. ':' .. id)
  end
  out[#out + 1] = item
end
return out
`)

// restoreScript writes a thread read by dumpScript under a new thread,
// unless that thread exists.
//
// KEYS[1] the new thread's namespaces set. ARGV[1] its key base; then for
// each namespace: escaped namespace, n, n ids, m, m blob field/value
// elements, then for each id: k, k checkpoint field/value elements.
// Replies 1, or 0 when the thread exists.
var restoreScript = goredis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local function hset(key, from, n)
  for j = from, from + n - 1, 200 do
    redis.call('HSET', key, unpack(ARGV, j, math.min(j + 199, from + n - 1)))
  end
end
local i = 2
while i <= #ARGV do
  local ns = ARGV[i]
  local n = tonumber(ARGV[i + 1])
  local ids = {}
  for j = 1, n do ids[j] = ARGV[i + 1 + j] end
  i = i + 2 + n
  local m = tonumber(ARGV[i])
  hset(ARGV[1] .. 'blobs:' .. ns, i + 1, m)
  i = i + 1 + m
  for _, id in ipairs(ids) do
    local k = tonumber(ARGV[i])
    hset(ARGV[1] .. 'cp:' .. ns .. ':' .. id, i + 1, k)
    i = i + 1 + k
    redis.call('ZADD', ARGV[1] .. 'ids:' .. ns, 0, id)
  end
  redis.call('SADD', KEYS[1], ns)
end
return 1
`)

// pruneScript prunes every namespace of a thread and collects the blobs no
// kept checkpoint needs.
//
// KEYS[1] the thread's namespaces set. ARGV[1] the thread's key base,
// ARGV[2] KeepLatest (0 for no limit), ARGV[3] the cutoff as a timeKey (""
// for no age limit): a checkpoint whose "t" sorts before it is old.
// Replies the number of checkpoints removed.
var pruneScript = goredis.NewScript(luaLib + `
local keep = tonumber(ARGV[2])
local cutoff = ARGV[3]
local removed = 0
for _, ns in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local idsKey = ARGV[1] .. 'ids:' .. ns
  local blobsKey = ARGV[1] .. 'blobs:' .. ns
  local cpPrefix = ARGV[1] .. 'cp:' .. ns .. ':'
  local ids = redis.call('ZRANGE', idsKey, 0, -1)
  local n = #ids
  local drop, kept = {}, {}
  for i = 1, n do
    local d = false
    if i < n then
      d = keep > 0 and i <= n - keep
      if not d and cutoff ~= '' then
        local t = redis.call('HGET', cpPrefix .. ids[i], 't')
        d = (not t) or lt(t, cutoff)
      end
    end
    if d then drop[#drop + 1] = ids[i] else kept[#kept + 1] = ids[i] end
  end
  if #drop > 0 then
    local keys = {}
    for j, id in ipairs(drop) do keys[j] = cpPrefix .. id end
    unlink(keys)
    for j = 1, #drop, 500 do
      redis.call('ZREM', idsKey, unpack(drop, j, math.min(j + 499, #drop)))
    end
    removed = removed + #drop
    collect(blobsKey, cpPrefix, kept)
  end
end
return removed
`)

// deleteRunScript removes the checkpoints of one run from every namespace
// of a thread, with their pending writes, and collects the blobs no
// remaining checkpoint needs. A namespace left empty is removed. A
// checkpoint whose metadata does not decode is not the run's: it stays,
// and reading it reports the damage.
//
// KEYS[1] the thread's namespaces set. ARGV[1] the thread's key base,
// ARGV[2] the run ID. Replies the number of checkpoints removed.
var deleteRunScript = goredis.NewScript(luaLib + `
local removed = 0
for _, ns in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local idsKey = ARGV[1] .. 'ids:' .. ns
  local blobsKey = ARGV[1] .. 'blobs:' .. ns
  local cpPrefix = ARGV[1] .. 'cp:' .. ns .. ':'
  local drop, kept = {}, {}
  for _, id in ipairs(redis.call('ZRANGE', idsKey, 0, -1)) do
    local run = nil
    local md = redis.call('HGET', cpPrefix .. id, 'md')
    if md then
      local ok, m = pcall(cjson.decode, md)
      if ok and type(m) == 'table' then run = m['run_id'] end
    end
    if run == ARGV[2] then drop[#drop + 1] = id else kept[#kept + 1] = id end
  end
  if #drop > 0 then
    local keys = {}
    for j, id in ipairs(drop) do keys[j] = cpPrefix .. id end
    unlink(keys)
    removed = removed + #drop
    if #kept == 0 then
      unlink({idsKey, blobsKey})
      redis.call('SREM', KEYS[1], ns)
    else
      for j = 1, #drop, 500 do
        redis.call('ZREM', idsKey, unpack(drop, j, math.min(j + 499, #drop)))
      end
      collect(blobsKey, cpPrefix, kept)
    end
  end
end
return removed
`)

// sizeScript sums MEMORY USAGE over every key of a thread.
//
// KEYS[1] the thread's namespaces set. ARGV[1] the thread's key base.
var sizeScript = goredis.NewScript(`
local function usage(key)
  return redis.call('MEMORY', 'USAGE', key, 'SAMPLES', 0) or 0
end
local total = usage(KEYS[1])
for _, ns in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local idsKey = ARGV[1] .. 'ids:' .. ns
  total = total + usage(idsKey) + usage(ARGV[1] .. 'blobs:' .. ns)
  for _, id in ipairs(redis.call('ZRANGE', idsKey, 0, -1)) do
    total = total + usage(ARGV[1] .. 'cp:' .. ns .. ':' .. id)
  end
end
return total
`)
