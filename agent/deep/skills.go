package deep

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// SkillTool is the name of the tool that loads a skill's instructions.
const SkillTool = "load_skill"

// SkillFile is the file of a skill's folder that holds its front matter
// and instructions.
const SkillFile = "SKILL.md"

// maxSkillBytes bounds one SKILL.md.
const maxSkillBytes = 256 << 10

// maxSkills bounds how many skills one set may hold.
const maxSkills = 200

// Skill is a skill's front matter: what the system prompt lists.
type Skill struct {
	// Name is the name the model loads it by.
	Name string
	// Description says when to use it.
	Description string
	// Path is its SKILL.md in the skills' fs.FS.
	Path string
	body string
}

var skillName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// LoadSkills reads the skills of fsys: every folder directly under dir
// ("." for the root) that holds a SKILL.md. The file starts with front
// matter between two "---" lines, with "name:" (lower-case letters,
// digits and -) and "description:" lines; the instructions follow it.
// Every problem is reported at once, naming the file.
func LoadSkills(fsys fs.FS, dir string) ([]Skill, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("deep: skills: %w", err)
	}
	var skills []Skill
	var errs []error
	seen := map[string]string{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := path.Join(dir, e.Name(), SkillFile)
		b, err := fs.ReadFile(fsys, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("deep: skill %s: %w", p, err))
			continue
		}
		if len(b) > maxSkillBytes {
			errs = append(errs, fmt.Errorf("deep: skill %s is %d bytes; a SKILL.md holds at most %d", p, len(b), maxSkillBytes))
			continue
		}
		s, err := parseSkill(p, string(b))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if other, ok := seen[s.Name]; ok {
			errs = append(errs, fmt.Errorf("deep: skills %s and %s are both named %q", other, p, s.Name))
			continue
		}
		seen[s.Name] = p
		skills = append(skills, s)
	}
	if len(skills) > maxSkills {
		errs = append(errs, fmt.Errorf("deep: %s holds %d skills; at most %d are listed in a prompt", dir, len(skills), maxSkills))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return skills, nil
}

// parseSkill reads a SKILL.md's front matter and body.
func parseSkill(p, text string) (Skill, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	front, body, closed := strings.Cut(rest, "\n---")
	if !ok || !closed {
		return Skill{}, fmt.Errorf("deep: skill %s does not start with front matter (a \"---\" line, name: and description: lines, a \"---\" line)", p)
	}
	s := Skill{Path: p, body: strings.TrimSpace(strings.TrimPrefix(body, "-"))}
	for line := range strings.SplitSeq(front, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.TrimSpace(k) {
		case "name":
			s.Name = v
		case "description":
			s.Description = v
		}
	}
	switch {
	case !skillName.MatchString(s.Name):
		return Skill{}, fmt.Errorf("deep: skill %s has the name %q; use 1 to 64 lower-case letters, digits and -", p, s.Name)
	case s.Description == "":
		return Skill{}, fmt.Errorf("deep: skill %s has no description; the model chooses skills by it", p)
	case s.body == "":
		return Skill{}, fmt.Errorf("deep: skill %s has no instructions after its front matter", p)
	}
	return s, nil
}

// Skills returns the middleware that offers skills: the system prompt
// of every model request lists their names and descriptions only, and
// SkillTool returns a skill's full instructions when the model decides to
// use it.
func Skills(skills []Skill) middleware.Middleware {
	s := &skillSet{skills: slices.Clone(skills)}
	names := make([]string, len(skills))
	for i, sk := range skills {
		names[i] = sk.Name
	}
	s.tool = tool.MustFunc(SkillTool, "Load the full instructions of one of your skills (listed in your instructions) before you do the work it covers.",
		func(_ context.Context, a struct {
			Name string `json:"name" jsonschema:"the skill's name"`
		}) (string, error) {
			for _, sk := range s.skills {
				if sk.Name == a.Name {
					return fmt.Sprintf("Skill %s (%s):\n\n%s", sk.Name, sk.Path, sk.body), nil
				}
			}
			return "", tool.BadArguments(SkillTool, "there is no skill %q; the skills are %s", a.Name, strings.Join(names, ", "))
		}, tool.ReadOnly())
	var b strings.Builder
	b.WriteString("## Skills\n\nYou have skills: instructions for particular kinds of work. " +
		"When a request matches a skill's description, load it with " + SkillTool + " first and follow it.\n")
	for _, sk := range skills {
		fmt.Fprintf(&b, "- %s: %s\n", sk.Name, sk.Description)
	}
	s.prompt = strings.TrimSpace(b.String())
	return s
}

type skillSet struct {
	skills []Skill
	tool   tool.Tool
	prompt string
}

func (s *skillSet) Name() string { return "skills" }

// Tools returns SkillTool.
func (s *skillSet) Tools() []tool.Tool { return []tool.Tool{s.tool} }

// WrapModel adds the list of skills to the system prompt.
func (s *skillSet) WrapModel(ctx context.Context, call *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
	call.Request = withSystemNote(call.Request, s.prompt)
	return next(ctx, call)
}

// withSystemNote returns req with note added as a system message after
// its leading system messages (the agent's prompt).
func withSystemNote(req *llm.Request, note string) *llm.Request {
	r := *req
	n := 0
	for n < len(r.Messages) && r.Messages[n].Role == llm.RoleSystem {
		n++
	}
	msgs := make([]llm.Message, 0, len(r.Messages)+1)
	msgs = append(append(append(msgs, r.Messages[:n]...), llm.System(note)), r.Messages[n:]...)
	r.Messages = msgs
	return &r
}
