package dbutil

// ContainmentCase is a stored document, a filter and whether the document
// contains the filter under PostgreSQL's jsonb @>. The SQLite store
// matches in Go and the PostgreSQL store in SQL; both are tested against
// these cases so that their searches agree.
type ContainmentCase struct {
	Doc, Filter string
	Want        bool
}

// ContainmentCases are the cases both stores are tested against.
var ContainmentCases = []ContainmentCase{
	{`{"a":1}`, `{}`, true},
	{`{"a":1}`, `{"a":1}`, true},
	{`{"a":1}`, `{"a":1.0}`, true},
	{`{"a":1.50}`, `{"a":1.5}`, true},
	{`{"a":1}`, `{"a":"1"}`, false},
	{`{"a":"x"}`, `{"a":"X"}`, false},
	{`{"a":1,"b":2}`, `{"a":1}`, true},
	{`{"a":1}`, `{"a":1,"b":2}`, false},
	{`{"a":null}`, `{"a":null}`, true},
	{`{}`, `{"a":null}`, false},
	{`{"a":true}`, `{"a":1}`, false},
	{`{"a":{"b":{"c":1,"d":2}}}`, `{"a":{"b":{"c":1}}}`, true},
	{`{"a":{"b":{"c":1}}}`, `{"a":{"b":{"c":2}}}`, false},
	{`{"a":{"b":1}}`, `{"a":{}}`, true},
	{`{"a":[1,2,3]}`, `{"a":[3,1]}`, true},
	{`{"a":[1,2,3]}`, `{"a":[]}`, true},
	{`{"a":[1,2]}`, `{"a":[4]}`, false},
	{`{"a":[1,2]}`, `{"a":1}`, false},
	{`{"a":1}`, `{"a":[1]}`, false},
	{`{"a":[[1,2],[3]]}`, `{"a":[[2]]}`, true},
	{`{"a":[{"id":1,"x":"y"},{"id":2}]}`, `{"a":[{"id":2}]}`, true},
	{`{"a":[{"id":1}]}`, `{"a":[{"id":1,"x":"y"}]}`, false},
	{`{"a":[1,1]}`, `{"a":[1,1,1]}`, true},
	{`{"messages":[{"type":"human","content":"hi"}]}`, `{"messages":[{"type":"human"}]}`, true},
	{`{"é":"ü"}`, `{"é":"ü"}`, true},
}
