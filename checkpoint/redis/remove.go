package redis

import (
	"context"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/trellis-agents/trellis/checkpoint"
)

var _ checkpoint.Remover = (*Saver)(nil)

// RemoveCheckpoints removes the named checkpoints of ref's thread namespace,
// with their pending writes and the blobs no remaining checkpoint needs, in
// one script; the namespace's latest checkpoint is never removed. See
// checkpoint.Remover.
func (s *Saver) RemoveCheckpoints(ctx context.Context, ref checkpoint.Ref, ids []string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if ref.ThreadID == "" {
		return 0, errEmptyThread
	}
	args := make([]any, 0, len(ids)+2)
	base := s.threadBase(ref.ThreadID)
	args = append(args, base, ref.Namespace)
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if id == "" {
			return 0, fmt.Errorf("checkpoint/redis: remove checkpoints of %s: an ID is empty", ref)
		}
		args = append(args, id)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	n, err := removeScript.Run(ctx, s.client, []string{base + "ns"}, args...).Int64()
	if err != nil {
		return 0, fmt.Errorf("checkpoint/redis: remove checkpoints of %s: %w", ref, err)
	}
	return int(n), nil
}

// removeScript removes named checkpoints of one namespace, with their
// pending writes, except the namespace's latest, and collects the blobs no
// remaining checkpoint needs.
//
// KEYS[1] the thread's namespaces set. ARGV[1] the thread's key base,
// ARGV[2] the namespace, ARGV[3..] the checkpoint IDs. Replies the number
// of checkpoints removed.
var removeScript = goredis.NewScript(luaLib + `
local ns = ARGV[2]
if redis.call('SISMEMBER', KEYS[1], ns) == 0 then return 0 end
local idsKey = ARGV[1] .. 'ids:' .. ns
local blobsKey = ARGV[1] .. 'blobs:' .. ns
local cpPrefix = ARGV[1] .. 'cp:' .. ns .. ':'
local latest = redis.call('ZRANGE', idsKey, -1, -1)[1]
local drop = {}
for i = 3, #ARGV do
  local id = ARGV[i]
  if id ~= latest and redis.call('ZSCORE', idsKey, id) then drop[#drop + 1] = id end
end
if #drop == 0 then return 0 end
local keys = {}
for j, id in ipairs(drop) do keys[j] = cpPrefix .. id end
unlink(keys)
for j = 1, #drop, 500 do
  redis.call('ZREM', idsKey, unpack(drop, j, math.min(j + 499, #drop)))
end
collect(blobsKey, cpPrefix, redis.call('ZRANGE', idsKey, 0, -1))
return #drop
`)
