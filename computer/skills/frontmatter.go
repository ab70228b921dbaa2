package skills

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// frontMatter is what a SKILL.md declares about its skill.
type frontMatter struct {
	Name          string         `yaml:"name"`
	Description   string         `yaml:"description"`
	License       string         `yaml:"license"`
	Compatibility string         `yaml:"compatibility"`
	AllowedTools  any            `yaml:"allowed-tools"`
	Tags          any            `yaml:"tags"`
	Metadata      map[string]any `yaml:"metadata"`
	Version       yaml.Node      `yaml:"version"`
}

// splitFrontMatter returns the YAML between a first line "---" and the next
// line "---", and the offset where the body starts (after that line). ok is
// false when the file has no complete front matter.
func splitFrontMatter(b []byte) (yamlPart []byte, bodyOff int, ok bool) {
	first, rest, found := bytes.Cut(b, []byte("\n"))
	if !found || string(bytes.TrimRight(first, "\r")) != "---" {
		return nil, 0, false
	}
	off := len(first) + 1
	for len(rest) > 0 {
		line, next, found := bytes.Cut(rest, []byte("\n"))
		if string(bytes.TrimRight(line, "\r")) == "---" {
			end := off + len(line)
			if found {
				end++
			}
			return b[len(first)+1 : off], end, true
		}
		if !found {
			break
		}
		off += len(line) + 1
		rest = next
	}
	return nil, 0, false
}

// bodyOffset is where the agent's bytes of a SKILL.md start: after the front
// matter, or 0 when there is none.
func bodyOffset(b []byte) int {
	if _, off, ok := splitFrontMatter(b); ok {
		return off
	}
	return 0
}

// parseFrontMatter reads a SKILL.md's front matter. name and description
// are required; name must be a kebab segment.
func parseFrontMatter(b []byte) (*frontMatter, error) {
	y, _, ok := splitFrontMatter(b)
	if !ok {
		return nil, errors.New("no YAML front matter (--- ... ---) at the top of SKILL.md")
	}
	var fm frontMatter
	if err := yaml.Unmarshal(y, &fm); err != nil {
		return nil, fmt.Errorf("front matter: %w", err)
	}
	if !ValidSegment(fm.Name) {
		return nil, fmt.Errorf("front matter: name %q is not [a-z0-9-], 1-64 characters, no leading, trailing or double '-'", fm.Name)
	}
	if strings.TrimSpace(fm.Description) == "" {
		return nil, errors.New("front matter: description is required")
	}
	return &fm, nil
}

// allowedTools normalizes allowed-tools: a list of strings, or one string
// of names separated by commas or spaces.
func (fm *frontMatter) allowedTools() []string {
	switch v := fm.AllowedTools.(type) {
	case string:
		return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// tags is the front matter's tags when it is a list of strings (0.4: passed
// through, omitted otherwise).
func (fm *frontMatter) tags() ([]string, bool) {
	v, ok := fm.Tags.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(v))
	for _, x := range v {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// version is the front matter's version as written (a scalar: "1.10" stays
// "1.10", not the float 1.1).
func (fm *frontMatter) version() string {
	if fm.Version.Kind == yaml.ScalarNode && fm.Version.Tag != "!!null" {
		return fm.Version.Value
	}
	return ""
}
