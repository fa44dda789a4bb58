package lcmsg

import (
	"encoding/json"
	"strings"
)

// Text is the text of LangChain message content as logged: the string
// itself, or the "text" parts of a list of parts joined as they are (other
// parts — images, tool-use blocks — are skipped). Content that is neither
// has no text: "".
func Text(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
