package spec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/server/api/wire"
)

func load(t *testing.T, name string) fixture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "sdk", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func body[T any](t *testing.T, name string) T {
	t.Helper()
	v, p := wire.Decode[T](load(t, name).request(), 0)
	if p != nil {
		t.Fatalf("%s: %v", name, p)
	}
	return v
}

func query[T any](t *testing.T, name string) T {
	t.Helper()
	v, p := wire.DecodeQuery[T](load(t, name).request())
	if p != nil {
		t.Fatalf("%s: %v", name, p)
	}
	return v
}

func ptr[T any](v T) *T { return &v }

// TestSDKValues: the SDK's requests decode to the values they mean, field
// by field, for the fields with several shapes or easy to get wrong.
func TestSDKValues(t *testing.T) {
	rs := body[wire.RunCreate](t, "runs_stream")
	want := wire.RunCreate{
		AssistantID:     "planner",
		Input:           json.RawMessage(`{"messages":[{"content":"Plan a trip to Hangzhou","role":"user"}]}`),
		CheckpointID:    "1ef-ckpt",
		Config:          &wire.Config{Tags: []string{"t"}, RecursionLimit: ptr(50), Configurable: map[string]any{"user_id": "u1"}},
		Context:         json.RawMessage(`{"locale":"zh-CN"}`),
		Metadata:        wire.Metadata{"source": "test"},
		InterruptBefore: &wire.NodeSelector{Nodes: []string{"approve"}},
		InterruptAfter:  &wire.NodeSelector{All: true},
		StreamMode:      wire.StreamModes{"values", "updates", "messages-tuple"},
		StreamSubgraphs: true, StreamResumable: true, FeedbackKeys: []string{"score"},
		Webhook: "https://example.com/hook", StrictResume: true,
		MultitaskStrategy: wire.MultitaskEnqueue, OnCompletion: wire.OnCompletionKeep, OnDisconnect: wire.DisconnectContinue,
		AfterSeconds: 2, IfNotExists: wire.IfNotExistsCreate, CheckpointDuring: ptr(true), Durability: wire.DurabilitySync,
	}
	if d := cmp.Diff(want, rs); d != "" {
		t.Errorf("runs_stream (-want +got):\n%s", d)
	}
	if q := query[wire.RunStreamQuery](t, "runs_stream"); !reflect.DeepEqual(q.Namespace, []string{"", "research"}) {
		t.Errorf("namespace = %q, want the root and research", q.Namespace)
	}

	g := body[wire.RunCreate](t, "runs_stream_goto_sends")
	wantCmd := &wire.Command{
		Update: &wire.Update{List: true, Pairs: []wire.UpdatePair{{Key: "topic", Value: json.RawMessage(`"x"`)}, {Key: "topic", Value: json.RawMessage(`"y"`)}}},
		Goto:   wire.Goto{{Node: "worker", Send: true, Input: json.RawMessage(`{"item":1}`)}, {Node: "summarize"}},
	}
	if d := cmp.Diff(wantCmd, g.Command); d != "" {
		t.Errorf("goto and update (-want +got):\n%s", d)
	}

	w := body[wire.RunCreate](t, "runs_wait")
	if string(w.Input) != "null" || !w.Command.HasResume() || string(w.Command.Resume) != `{"int-1":{"choice":"b"}}` {
		t.Errorf("runs_wait: input %s, resume %s; want null and the answer by interrupt ID", w.Input, w.Command.Resume)
	}
	if len(w.Command.Goto) != 1 || w.Command.Goto[0].Node != "plan" || w.Command.Goto[0].Send {
		t.Errorf("goto = %+v, want the node plan", w.Command.Goto)
	}
	if r := body[wire.RunCreate](t, "runs_stream_resume"); string(r.Command.Resume) != `"approve"` || len(r.Input) != 0 {
		t.Errorf("plain resume: %s, input %q", r.Command.Resume, r.Input)
	}
	if r := body[wire.RunCreate](t, "runs_stream_interrupt_strategy"); r.EffectiveDurability() != wire.DurabilityExit || r.MultitaskStrategy != wire.MultitaskInterrupt {
		t.Errorf("durability %s, strategy %s", r.EffectiveDurability(), r.MultitaskStrategy)
	}
	if r := body[wire.RunCreate](t, "runs_create"); r.EffectiveCheckpointID() != "1ef-ckpt" {
		t.Errorf("checkpoint from the object = %q", r.EffectiveCheckpointID())
	}

	b := body[wire.RunBatch](t, "runs_batch")
	if len(b) != 2 || b[0].AssistantID != "planner" || !reflect.DeepEqual(b[0].StreamMode, wire.StreamModes{"values"}) ||
		b[0].MultitaskStrategy != wire.MultitaskReject || b[1].AssistantID != "builder" || b[1].AfterSeconds != 1 || string(b[1].Input) != "null" {
		t.Errorf("batch with camelCase options = %+v", b)
	}

	tc := body[wire.ThreadCreate](t, "threads_create")
	if tc.TTL == nil || tc.TTL.Minutes != 60 || tc.TTL.Strategy != "delete" || tc.IfExists != wire.IfExistsDoNothing ||
		tc.Metadata["graph_id"] != "planner" || len(tc.Supersteps) != 2 || tc.Supersteps[1].Updates[0].AsNode != "router" ||
		tc.Supersteps[1].Updates[0].Command.Goto[0].Node != "plan" {
		t.Errorf("threads_create = %+v", tc)
	}
	if tp := body[wire.ThreadPatch](t, "threads_update"); tp.TTL == nil || tp.TTL.Minutes != 30 {
		t.Errorf("ttl object = %+v", tp.TTL)
	}

	sp := body[wire.StorePut](t, "store_put")
	if !reflect.DeepEqual(sp.Index, &wire.StoreIndex{Fields: []string{"color"}}) || *sp.TTL != 60 || sp.Value["size"] != 3.0 {
		t.Errorf("store_put = %+v", sp)
	}
	if sp := body[wire.StorePut](t, "store_put_noindex"); !sp.Index.Disabled || sp.TTL != nil {
		t.Errorf("index false, ttl null = %+v", sp)
	}
	if sg := query[wire.StoreGetQuery](t, "store_get"); !reflect.DeepEqual(sg.Labels(), []string{"users", "u1", "prefs"}) || sg.Key != "theme" || !sg.RefreshTTL {
		t.Errorf("store_get = %+v", sg)
	}

	if c := query[wire.RunCancelQuery](t, "runs_cancel"); !c.Wait || c.Action != wire.CancelRollback {
		t.Errorf("cancel = %+v", c)
	}
	if c := query[wire.RunCancelQuery](t, "runs_cancel_taken"); c.Wait || c.Reason != "taken" {
		t.Errorf("cancel taken = %+v", c)
	}
	if j := query[wire.RunJoinStreamQuery](t, "runs_join_stream"); !j.CancelOnDisconnect || !reflect.DeepEqual(j.StreamMode, wire.StreamModes{"values", "custom"}) {
		t.Errorf("join stream = %+v", j)
	}
	if x := query[wire.AssistantGraphQuery](t, "assistants_graph"); x.Xray.Depth != 2 {
		t.Errorf("xray=2 → %+v", x)
	}
	if x := query[wire.AssistantGraphQuery](t, "assistants_graph_xray_true"); x.Xray.Depth != -1 {
		t.Errorf("xray=true → %+v", x)
	}
	if s := query[wire.ThreadStateQuery](t, "threads_get_state"); !s.Subgraphs || !reflect.DeepEqual(s.Select, []wire.StateSelectField{"values.messages", "next"}) {
		t.Errorf("state query = %+v", s)
	}
	if h := body[wire.ThreadHistory](t, "threads_history"); h.Before.Configurable["checkpoint_id"] != "1ef-ckpt" || *h.Limit != 20 {
		t.Errorf("history = %+v", h)
	}
}

// TestSDKBodiesRoundTrip: what a decoded body encodes to decodes to the
// same value (the run service stores bodies and reads them back).
func TestSDKBodiesRoundTrip(t *testing.T) {
	for _, name := range []string{"runs_stream", "runs_stream_goto_sends", "runs_wait", "runs_create", "runs_stream_resume"} {
		v := body[wire.RunCreate](t, name)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, p := wire.DecodeBytes[wire.RunCreate](b)
		if p != nil {
			t.Fatalf("%s: re-decoding %s: %v", name, b, p)
		}
		if d := cmp.Diff(v, again); d != "" {
			t.Errorf("%s changed in a round trip (-first +second):\n%s", name, d)
		}
	}
	b := body[wire.RunBatch](t, "runs_batch")
	enc, _ := json.Marshal(b)
	again, p := wire.DecodeBytes[wire.RunBatch](enc)
	if p != nil || !cmp.Equal(b, again) {
		t.Errorf("batch round trip: %v\n%s", p, cmp.Diff(b, again))
	}
}
