package a2aapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/trellis-agents/trellis/server/db"
)

// ListTasks bounds: the page size's default and maximum (the
// specification's), and how many of the tenant's threads a listing
// without contextId reads (the most recently updated ones).
const (
	listDefaultPage = 50
	listMaxPage     = 100
	listMaxThreads  = 100
)

// ListTasks answers tasks/list: this agent's tasks, in one context
// (contextId) or in the tenant's threads this assistant ran last (the
// listMaxThreads most recently updated), newest status first, filtered by
// status and by statusTimestampAfter, paged by pageSize (1 to 100,
// default 50) and an opaque pageToken, each task with its last
// historyLength messages and its artifacts only when includeArtifacts.
func (ag *agent) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	size := req.PageSize
	switch {
	case size == 0:
		size = listDefaultPage
	case size < 1 || size > listMaxPage:
		return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("pageSize %d is out of range: give 1 to %d (or none, for %d)", size, listMaxPage, listDefaultPage))
	}
	offset := 0
	if req.PageToken != "" {
		n, err := strconv.Atoi(req.PageToken)
		if err != nil || n < 0 {
			return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("pageToken %q is not one this agent gave: pass the nextPageToken of the previous page, or none", req.PageToken))
		}
		offset = n
	}
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "historyLength must not be negative")
	}
	var threads []db.Thread
	if req.ContextID != "" {
		if p := db.IDProblem(req.ContextID); p != "" {
			return nil, a2a.NewError(a2a.ErrInvalidParams, "contextId "+p)
		}
		th, err := ag.h.DB.GetThread(ctx, ag.tenant, req.ContextID)
		switch {
		case err == nil:
			threads = []db.Thread{th}
		case !errors.Is(err, db.ErrNotFound):
			return nil, ag.failure("read the context", err)
		}
	} else {
		var err error
		threads, err = ag.h.DB.SearchThreads(ctx, ag.tenant, db.ThreadQuery{Query: db.Query{
			Metadata: db.Metadata{"assistant_id": ag.assistant.ID}, Limit: listMaxThreads, SortBy: "updated_at", SortOrder: "desc"}})
		if err != nil {
			return nil, ag.failure("list the contexts", err)
		}
	}
	var tasks []*a2a.Task
	for _, th := range threads {
		rs, err := ag.h.DB.ListRuns(ctx, ag.tenant, th.ID, db.RunQuery{Limit: maxTaskRuns})
		if err != nil {
			return nil, ag.failure("list the context's runs", err)
		}
		for _, t := range groupTasks(th, rs, ag.assistant.ID) {
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
			tasks = append(tasks, v)
		}
	}
	slices.SortStableFunc(tasks, func(a, b *a2a.Task) int { return stamp(b).Compare(stamp(a)) })
	out := &a2a.ListTasksResponse{TotalSize: len(tasks), PageSize: size, Tasks: []*a2a.Task{}}
	if offset < len(tasks) {
		end := min(offset+size, len(tasks))
		out.Tasks = tasks[offset:end]
		if end < len(tasks) {
			out.NextPageToken = strconv.Itoa(end)
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

func stamp(t *a2a.Task) time.Time {
	if t.Status.Timestamp == nil {
		return time.Time{}
	}
	return *t.Status.Timestamp
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
