package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"
)

// The journal is an experiment's record as it runs, one JSON object a
// line: a header naming the experiment, then a "start" line before each
// trial runs and a "trial" line with its result after. It is what makes an
// interrupted experiment resumable: trials with a result are not run
// again; a trial that started but has none is run again on a new thread
// (its attempt number goes up, so its thread ID changes).
type journalLine struct {
	Experiment *journalHeader `json:"experiment,omitempty"`
	Start      *trialKey      `json:"start,omitempty"`
	Trial      *TrialResult   `json:"trial,omitempty"`
}

type journalHeader struct {
	Name           string    `json:"name"`
	Dataset        string    `json:"dataset"`
	DatasetVersion string    `json:"dataset_version,omitempty"`
	Target         string    `json:"target"`
	Repeat         int       `json:"repeat"`
	Started        time.Time `json:"started"`
}

type trialKey struct {
	Case       string `json:"case"`
	Repetition int    `json:"repetition"`
	Attempt    int    `json:"attempt"`
}

type journal struct {
	mu   sync.Mutex
	f    *os.File
	head journalHeader
	done map[trialKey]TrialResult // keyed with Attempt 0
	next map[trialKey]int         // the attempt a trial without a result runs next
}

// openJournal opens (or creates) the journal at path for head. An
// existing journal must be of the same experiment, dataset and repetition
// count.
func openJournal(path string, head journalHeader) (*journal, error) {
	j := &journal{head: head, done: map[trialKey]TrialResult{}, next: map[trialKey]int{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if err := j.load(path, b); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	j.f = f
	if len(b) == 0 {
		if err := j.write(journalLine{Experiment: &j.head}); err != nil {
			f.Close()
			return nil, err
		}
	} else if b[len(b)-1] != '\n' {
		// A line cut short by a crash: end it, so the next line is whole.
		if _, err := f.Write([]byte("\n")); err != nil {
			f.Close()
			return nil, err
		}
	}
	return j, nil
}

func (j *journal) load(path string, b []byte) error {
	lines := bytes.Split(b, []byte("\n"))
	for i, raw := range lines {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		var l journalLine
		if err := json.Unmarshal(raw, &l); err != nil {
			if i == len(lines)-1 {
				break // the last line, cut short by a crash: its trial runs again
			}
			return fmt.Errorf("journal %s:%d: %w", path, i+1, err)
		}
		switch {
		case l.Experiment != nil:
			h := *l.Experiment
			if h.Name != j.head.Name || h.Dataset != j.head.Dataset || h.DatasetVersion != j.head.DatasetVersion || h.Repeat != j.head.Repeat {
				return fmt.Errorf("journal %s is of experiment %q (dataset %q %s, %d repetitions), not %q (dataset %q %s, %d repetitions); name another experiment or journal",
					path, h.Name, h.Dataset, h.DatasetVersion, h.Repeat, j.head.Name, j.head.Dataset, j.head.DatasetVersion, j.head.Repeat)
			}
			j.head.Started = h.Started
		case l.Start != nil:
			k := trialKey{Case: l.Start.Case, Repetition: l.Start.Repetition}
			j.next[k] = max(j.next[k], l.Start.Attempt+1)
		case l.Trial != nil:
			j.done[trialKey{Case: l.Trial.Case, Repetition: l.Trial.Repetition}] = *l.Trial
		}
	}
	return nil
}

func (j *journal) write(l journalLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	w := bufio.NewWriterSize(j.f, len(b)+1)
	w.Write(b)
	w.WriteByte('\n')
	return w.Flush()
}

func (j *journal) close() error {
	if j == nil || j.f == nil {
		return nil
	}
	return j.f.Close()
}
