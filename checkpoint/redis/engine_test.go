package redis_test

import (
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/redis"
	"github.com/trellis-agents/trellis/graph/graphtest"
)

// TestEngine runs the engine's durable-thread cases on Redis in every
// durability mode.
func TestEngine(t *testing.T) {
	c := redis.Connect(t)
	s := redis.New(c, redis.WithPrefix(redis.NewPrefix(t, c)))
	graphtest.Run(t, func(*testing.T) checkpoint.Saver { return s })
}
