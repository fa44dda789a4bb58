package a2aapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/trellis-agents/trellis/server/db"
)

// ListTasks bounds: the page size's default and maximum (the
// specification's), how many tasks a listing reads at most (the newest),
// and how many of them one database read brings.
const (
	listDefaultPage = 50
	listMaxPage     = 100
	listMaxScan     = 1000
	listBatch       = 250
)

// ListTasks answers tasks/list: this agent's tasks, in one context
// (contextId) or in all the tenant's (found by the runs this assistant
// ran for the A2A wire, whichever assistant ran their thread since; the
// listMaxScan newest), newest task first (by its first run's creation),
// filtered by status and by statusTimestampAfter, paged by pageSize (1 to
// 100, default 50) and an opaque pageToken naming the last task of the
// previous page, so tasks created while a client pages neither repeat
// nor shift its later pages; each task with its last historyLength
// messages and its artifacts only when includeArtifacts.
func (ag *agent) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	size := req.PageSize
	switch {
	case size == 0:
		size = listDefaultPage
	case size < 1 || size > listMaxPage:
		return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("pageSize %d is out of range: give 1 to %d (or none, for %d)", size, listMaxPage, listDefaultPage))
	}
	var after *db.RunCursor
	if req.PageToken != "" {
		c, ok := parseToken(req.PageToken)
		if !ok {
			return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("pageToken %q is not one this agent gave: pass the nextPageToken of the previous page, or none", req.PageToken))
		}
		after = &c
	}
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "historyLength must not be negative")
	}
	l := lister{ag: ag, threads: map[string][]*task{}}
	var roots []db.Run
	if req.ContextID != "" {
		if p := db.IDProblem(req.ContextID); p != "" {
			return nil, a2a.NewError(a2a.ErrInvalidParams, "contextId "+p)
		}
		ts, err := l.tasks(ctx, req.ContextID)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			roots = append(roots, t.first())
		}
		slices.SortStableFunc(roots, func(a, b db.Run) int { return newer(b, a) })
	} else {
		q := db.RunSearch{AssistantID: ag.assistant.ID, Metadata: map[string]string{mdSource: source}, Missing: []string{mdTask}, Limit: listBatch}
		for len(roots) < listMaxScan {
			rs, err := ag.h.DB.FindRuns(ctx, ag.tenant, q)
			if err != nil {
				return nil, ag.failure("list the tasks", err)
			}
			roots = append(roots, rs...)
			if len(rs) < q.Limit {
				break
			}
			last := rs[len(rs)-1]
			q.Before = &db.RunCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
	}
	filtered := req.Status != "" && req.Status != a2a.TaskStateUnspecified || req.StatusTimestampAfter != nil
	out := &a2a.ListTasksResponse{PageSize: size, Tasks: []*a2a.Task{}}
	var lastOnPage db.Run
	for _, root := range roots {
		full := len(out.Tasks) == size
		onPage := !full && (after == nil || newer(root, db.Run{CreatedAt: after.CreatedAt, ID: after.ID}) < 0)
		if !filtered && !onPage {
			// Counted without reading its thread.
			out.TotalSize++
			if full && out.NextPageToken == "" {
				out.NextPageToken = token(lastOnPage)
			}
			continue
		}
		t, err := l.task(ctx, root)
		if err != nil {
			return nil, err
		}
		if t == nil {
			continue
		}
		v, err := ag.view(ctx, t, nil)
		if err != nil {
			return nil, ag.failure("read a task", err)
		}
		if req.Status != "" && req.Status != a2a.TaskStateUnspecified && v.Status.State != req.Status {
			continue
		}
		if req.StatusTimestampAfter != nil && (v.Status.Timestamp == nil || !v.Status.Timestamp.After(*req.StatusTimestampAfter)) {
			continue
		}
		out.TotalSize++
		switch {
		case onPage:
			out.Tasks = append(out.Tasks, v)
			lastOnPage = root
		case full && out.NextPageToken == "":
			out.NextPageToken = token(lastOnPage)
		}
	}
	for _, v := range out.Tasks {
		trimHistory(v, req.HistoryLength)
		if !req.IncludeArtifacts {
			v.Artifacts = nil
		}
	}
	return out, nil
}

// lister reads the tasks of the threads a listing meets, once each.
type lister struct {
	ag      *agent
	threads map[string][]*task
}

// tasks are the agent's tasks in a thread (none for a missing thread).
func (l *lister) tasks(ctx context.Context, thread string) ([]*task, error) {
	if ts, ok := l.threads[thread]; ok {
		return ts, nil
	}
	th, err := l.ag.h.DB.GetThread(ctx, l.ag.tenant, thread)
	switch {
	case errors.Is(err, db.ErrNotFound):
		l.threads[thread] = nil
		return nil, nil
	case err != nil:
		return nil, l.ag.failure("read the context", err)
	}
	rs, err := l.ag.h.DB.ListRuns(ctx, l.ag.tenant, th.ID, db.RunQuery{Limit: maxTaskRuns})
	if err != nil {
		return nil, l.ag.failure("list the context's runs", err)
	}
	ts := groupTasks(th, rs, l.ag.assistant.ID)
	l.threads[thread] = ts
	return ts, nil
}

// task is the task root begins (nil when its thread no longer holds it).
func (l *lister) task(ctx context.Context, root db.Run) (*task, error) {
	ts, err := l.tasks(ctx, root.ThreadID)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if t.first().ID == root.ID {
			return t, nil
		}
	}
	return nil, nil
}

// newer compares runs by creation, then ID: positive when a is the newer
// (sort with newer(b, a) for newest first).
func newer(a, b db.Run) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// token is the page token after run r: its creation time and ID.
func token(r db.Run) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(r.CreatedAt.UnixMicro(), 10) + "." + r.ID))
}

// parseToken reads a page token.
func parseToken(s string) (db.RunCursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return db.RunCursor{}, false
	}
	at, id, ok := strings.Cut(string(b), ".")
	us, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" {
		return db.RunCursor{}, false
	}
	return db.RunCursor{CreatedAt: time.UnixMicro(us), ID: id}, true
}

// groupTasks makes the tasks of assistant out of a thread's runs (newest
// first, as ListRuns gives them): each task's first run, then the runs
// that answer it, oldest first.
func groupTasks(th db.Thread, rs []db.Run, assistant string) []*task {
	byRoot := map[string]*task{}
	var order []string
	for _, r := range slices.Backward(rs) {
		if r.Metadata[mdSource] != source {
			continue
		}
		if root, _ := r.Metadata[mdTask].(string); root != "" {
			if t := byRoot[root]; t != nil {
				t.runs = append(t.runs, r)
			}
			continue
		}
		if r.AssistantID != assistant {
			continue
		}
		byRoot[r.ID] = &task{id: taskID(r.ID, th.ID), thread: th, runs: []db.Run{r}}
		order = append(order, r.ID)
	}
	out := make([]*task, 0, len(order))
	for _, id := range order {
		t := byRoot[id]
		slices.SortStableFunc(t.runs[1:], func(a, b db.Run) int { return a.CreatedAt.Compare(b.CreatedAt) })
		out = append(out, t)
	}
	return out
}
