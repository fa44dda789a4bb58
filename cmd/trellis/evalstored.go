package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/eval"
)

// maxStoredDataset bounds the export read from a server: a dataset larger
// than this is refused rather than read into memory whole.
const maxStoredDataset = 64 << 20

// loadEvalDataset reads DATASET: the file at ref when there is one (Trellis
// JSONL, or an ADK set by its name); otherwise, with --url, a dataset
// stored on that server, named by its ID or its name, with "@N" for
// version N (default its latest).
func loadEvalDataset(ctx context.Context, ref string, f evalFlags) (*eval.Dataset, error) {
	if _, err := os.Stat(ref); err == nil || f.url == "" {
		return eval.Load(ref) // Trellis JSONL, or ADK sets by name (eval/adk)
	}
	name, version := ref, 0
	if i := strings.LastIndexByte(ref, '@'); i > 0 {
		if v, err := strconv.Atoi(ref[i+1:]); err == nil {
			if v < 1 {
				return nil, fmt.Errorf("dataset %q: version %d: versions start at 1", ref, v)
			}
			name, version = ref[:i], v
		}
	}
	c := storedDatasets{base: strings.TrimRight(f.url, "/"), key: f.apiKey}
	if c.key == "" {
		c.key = os.Getenv("TRELLIS_API_KEY")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	id, err := c.resolve(ctx, name)
	if err != nil {
		return nil, err
	}
	q := ""
	if version > 0 {
		q = "?version=" + strconv.Itoa(version)
	}
	body, err := c.get(ctx, "/datasets/"+url.PathEscape(id)+"/export"+q)
	if err != nil {
		return nil, fmt.Errorf("dataset %q on %s: %w", ref, c.base, err)
	}
	ds, err := eval.ReadDataset(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("dataset %q on %s: %w", ref, c.base, err)
	}
	return ds, nil
}

// storedDatasets reads datasets over a server's dataset routes.
type storedDatasets struct{ base, key string }

// errNotFound is a 404 from the server.
var errNotFound = errors.New("not found")

// resolve finds the ID of the dataset named ref: ref itself when it is an
// ID, else the one dataset whose name is exactly ref.
func (c storedDatasets) resolve(ctx context.Context, ref string) (string, error) {
	if _, err := c.get(ctx, "/datasets/"+url.PathEscape(ref)); err == nil {
		return ref, nil
	} else if !errors.Is(err, errNotFound) {
		return "", fmt.Errorf("no file %q here, and the server at %s could not be asked for a dataset of that name: %w", ref, c.base, err)
	}
	search, _ := json.Marshal(map[string]any{"name": ref, "limit": 100})
	b, err := c.do(ctx, http.MethodPost, "/datasets/search", search)
	if err != nil {
		return "", fmt.Errorf("no file %q here; searching the server's datasets: %w", ref, err)
	}
	var found []struct {
		ID   string `json:"dataset_id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(b, &found); err != nil {
		return "", fmt.Errorf("searching the server's datasets: the answer is not a list of datasets: %w", err)
	}
	for _, d := range found {
		if d.Name == ref {
			return d.ID, nil
		}
	}
	return "", fmt.Errorf("no file %q here, and the server at %s has no dataset with that ID or name (list them with POST /datasets/search)", ref, c.base)
}

func (c storedDatasets) get(ctx context.Context, path string) ([]byte, error) {
	return c.do(ctx, http.MethodGet, path, nil)
}

// do sends one request and returns the body of a 2xx answer, bounded.
func (c storedDatasets) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("X-Api-Key", c.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxStoredDataset+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if len(b) > maxStoredDataset {
		return nil, fmt.Errorf("%s %s: the answer is over %d MiB", method, path, maxStoredDataset>>20)
	}
	if resp.StatusCode/100 == 2 {
		return b, nil
	}
	msg := strings.TrimSpace(string(b))
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%s %s: %w (%s): %s", method, path, errNotFound, resp.Status, msg)
	}
	return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, msg)
}
