module github.com/trellis-agents/trellis

go 1.26

require (
	github.com/google/go-cmp v0.7.0
	github.com/google/uuid v1.6.0
)

require go.uber.org/goleak v1.3.0
