package a2aapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/db"
)

// mdPush keeps push notification configs: on a task's first run, the
// config its first message carried (stored with the run, so a run that
// ends at once is still notified); on the thread, by task, the configs
// set later.
const mdPush = "a2a_push"

// maxPushConfigs bounds a task's push configs.
const maxPushConfigs = 10

// pushConfig is a push config as the wire stores it.
type pushConfig struct {
	ID          string `json:"id"`
	URL         string `json:"url"`
	Token       string `json:"token,omitempty"`
	Scheme      string `json:"scheme,omitempty"`
	Credentials string `json:"credentials,omitempty"`
}

func (p pushConfig) a2a(task a2a.TaskID) *a2a.PushConfig {
	c := &a2a.PushConfig{TaskID: task, ID: p.ID, URL: p.URL, Token: p.Token}
	if p.Scheme != "" {
		c.Auth = &a2a.PushAuthInfo{Scheme: p.Scheme, Credentials: p.Credentials}
	}
	return c
}

// Push is one push notification to send: the task as a 1.0 stream
// response, to the client's URL with its token and authorization.
type Push struct {
	URL     string
	Body    []byte
	Headers map[string]string
}

// checkPush reads a client's push config: a URL the outbound guard
// allows (CheckPushURL), an ID (a new one when empty).
func (ag *agent) checkPush(ctx context.Context, c *a2a.PushConfig) (pushConfig, error) {
	if c == nil || strings.TrimSpace(c.URL) == "" {
		return pushConfig{}, a2a.NewError(a2a.ErrInvalidParams, "the push notification config needs a url")
	}
	if ag.h.CheckPushURL != nil {
		if err := ag.h.CheckPushURL(ctx, c.URL); err != nil {
			return pushConfig{}, a2a.NewError(a2a.ErrInvalidParams, "the push notification url is refused: "+err.Error())
		}
	}
	p := pushConfig{ID: c.ID, URL: c.URL, Token: c.Token}
	if p.ID == "" {
		p.ID = checkpoint.NewID()
	}
	if c.Auth != nil {
		p.Scheme, p.Credentials = c.Auth.Scheme, c.Auth.Credentials
	}
	return p, nil
}

// decodeInto reads a metadata value (JSON as the database returns it).
func decodeInto(v any, out any) {
	if v == nil {
		return
	}
	b, err := json.Marshal(v)
	if err == nil {
		_ = json.Unmarshal(b, out)
	}
}

// pushConfigs are a task's configs: its first message's, then the ones
// set later.
func pushConfigs(t *task) (first []pushConfig, later map[string][]pushConfig) {
	decodeInto(t.first().Metadata[mdPush], &first)
	decodeInto(t.thread.Metadata[mdPush], &later)
	if later == nil {
		later = map[string][]pushConfig{}
	}
	return first, later
}

func allPushConfigs(t *task) []pushConfig {
	first, later := pushConfigs(t)
	return append(first, later[t.first().ID]...)
}

// addPush stores a config set for an existing task on its thread,
// replacing one of the same ID.
func (ag *agent) addPush(ctx context.Context, t *task, p pushConfig) error {
	first, later := pushConfigs(t)
	for _, f := range first {
		if f.ID == p.ID {
			return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("push config %s came with the task's first message and cannot be replaced; choose another id", p.ID))
		}
	}
	list := later[t.first().ID]
	kept := list[:0]
	for _, c := range list {
		if c.ID != p.ID {
			kept = append(kept, c)
		}
	}
	if len(kept)+len(first) >= maxPushConfigs {
		return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("task %s has %d push configs; at most %d", t.id, len(kept)+len(first), maxPushConfigs))
	}
	later[t.first().ID] = append(kept, p)
	_, err := ag.h.DB.UpdateThreadMetadata(ctx, ag.tenant, t.thread.ID, db.Metadata{mdPush: later})
	return err
}

// CreateTaskPushConfig stores a push config for a task: each time a run
// of the task ends (input-required, completed, failed, canceled) the task
// is POSTed to the URL.
func (ag *agent) CreateTaskPushConfig(ctx context.Context, req *a2a.PushConfig) (*a2a.PushConfig, error) {
	if req == nil {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "no push config")
	}
	t, err := ag.loadTask(ctx, req.TaskID)
	if err != nil {
		return nil, ag.failure("read the task", err)
	}
	p, err := ag.checkPush(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := ag.addPush(ctx, t, p); err != nil {
		return nil, ag.failure("store the push config", err)
	}
	return p.a2a(t.id), nil
}

// GetTaskPushConfig reads one of a task's push configs.
func (ag *agent) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	t, err := ag.loadTask(ctx, req.TaskID)
	if err != nil {
		return nil, ag.failure("read the task", err)
	}
	for _, p := range allPushConfigs(t) {
		if p.ID == req.ID {
			return p.a2a(t.id), nil
		}
	}
	return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("task %s has no push config %q", t.id, req.ID))
}

// ListTaskPushConfigs lists a task's push configs.
func (ag *agent) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	t, err := ag.loadTask(ctx, req.TaskID)
	if err != nil {
		return nil, ag.failure("read the task", err)
	}
	out := &a2a.ListTaskPushConfigResponse{Configs: []*a2a.PushConfig{}}
	for _, p := range allPushConfigs(t) {
		out.Configs = append(out.Configs, p.a2a(t.id))
	}
	return out, nil
}

// DeleteTaskPushConfig removes a push config set after the task began.
func (ag *agent) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) error {
	t, err := ag.loadTask(ctx, req.TaskID)
	if err != nil {
		return ag.failure("read the task", err)
	}
	first, later := pushConfigs(t)
	for _, f := range first {
		if f.ID == req.ID {
			return a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf("push config %s came with the task's first message and lasts as long as the task", req.ID))
		}
	}
	list := later[t.first().ID]
	kept := list[:0]
	for _, c := range list {
		if c.ID != req.ID {
			kept = append(kept, c)
		}
	}
	if len(kept) == len(list) {
		return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("task %s has no push config %q", t.id, req.ID))
	}
	later[t.first().ID] = kept
	if _, err := ag.h.DB.UpdateThreadMetadata(ctx, ag.tenant, t.thread.ID, db.Metadata{mdPush: later}); err != nil {
		return ag.failure("delete the push config", err)
	}
	return nil
}

// Pushes are the push notifications of a finished run's task, one per
// config: the task (as a 1.0 stream response, {"task": {...}}) with the
// config's token in X-A2A-Notification-Token and its authentication as
// Authorization. A run the wire did not start has none. The server sends
// them through its webhook queue.
func (h *Handler) Pushes(ctx context.Context, tenant string, run db.Run) ([]Push, error) {
	if run.Metadata[mdSource] != source {
		return nil, nil
	}
	root := run.ID
	if r, ok := run.Metadata[mdTask].(string); ok && r != "" {
		root = r
	}
	a, err := h.DB.GetAssistant(ctx, tenant, run.AssistantID)
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil // deleted meanwhile
	}
	if err != nil {
		return nil, err
	}
	ag := &agent{h: h, tenant: tenant, assistant: a}
	t, err := ag.loadTask(ctx, taskID(root, run.ThreadID))
	var ae *a2a.Error
	if errors.As(err, &ae) {
		return nil, nil // the thread is gone
	}
	if err != nil {
		return nil, err
	}
	cfgs := allPushConfigs(t)
	if len(cfgs) == 0 {
		return nil, nil
	}
	v, err := ag.view(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(a2a.StreamResponse{Event: v})
	if err != nil {
		return nil, err
	}
	out := make([]Push, len(cfgs))
	for i, c := range cfgs {
		hd := map[string]string{}
		if c.Token != "" {
			hd["X-A2A-Notification-Token"] = c.Token
		}
		if c.Scheme != "" {
			hd["Authorization"] = strings.TrimSpace(c.Scheme + " " + c.Credentials)
		}
		out[i] = Push{URL: c.URL, Body: body, Headers: hd}
	}
	return out, nil
}
