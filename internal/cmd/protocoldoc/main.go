// Command protocoldoc writes the tables of docs/PROTOCOL.md that the
// protocol table (smcp/protocol.go, smcp/version.go) decides: the profiles,
// and every event with its ack form in each profile. It replaces what lies
// between each pair of markers
//
//	<!-- protocoldoc:NAME begin --> ... <!-- protocoldoc:NAME end -->
//
// and leaves the rest of the page, written by hand, as it is. `make generate`
// runs it:
//
//	go run ./internal/cmd/protocoldoc docs/PROTOCOL.md
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/smcpgw/smcp-gateway/smcp"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: protocoldoc docs/PROTOCOL.md")
		os.Exit(2)
	}
	if err := rewrite(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "protocoldoc:", err)
		os.Exit(1)
	}
}

func rewrite(path string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := fill(doc)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(out, doc) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}

// sections are the generated parts, by marker name.
var sections = map[string]func() string{
	"profiles": profilesTable,
	"events":   eventsTable,
}

// fill replaces the body of every marked section of doc; each section must
// be present exactly once.
func fill(doc []byte) ([]byte, error) {
	s := string(doc)
	for name, gen := range sections {
		begin := "<!-- protocoldoc:" + name + " begin -->\n"
		end := "<!-- protocoldoc:" + name + " end -->"
		i := strings.Index(s, begin)
		j := strings.Index(s, end)
		if i < 0 || j < i || strings.Count(s, begin) != 1 || strings.Count(s, end) != 1 {
			return nil, fmt.Errorf("want one %q ... %q section", strings.TrimSpace(begin), end)
		}
		s = s[:i+len(begin)] + gen() + s[j:]
	}
	return []byte(s), nil
}

func profilesTable() string {
	var b strings.Builder
	b.WriteString("| profile | `a2c_version` announcing it | this gateway's clients send | events |\n|---|---|---|---|\n")
	for _, v := range smcp.Versions() {
		p := smcp.ProfileOf(v)
		n := 0
		for _, k := range []smcp.Kind{smcp.Server, smcp.Routed, smcp.Notify} {
			n += len(p.Events(k))
		}
		announce := "`" + v.String() + ".x`"
		if v == smcp.V02 {
			announce += ", or none (unless `--require-version`)"
		}
		name := v.String()
		if v.Draft() {
			name += " (draft: served only when `--protocols` names it)"
		}
		fmt.Fprintf(&b, "| %s | %s | `%s` | %d |\n", name, announce, v.Full(), n)
	}
	return b.String()
}

func eventsTable() string {
	var b strings.Builder
	b.WriteString("| event | kind |")
	for _, v := range smcp.Versions() {
		if v.Draft() {
			fmt.Fprintf(&b, " %s (draft) |", v)
		} else {
			fmt.Fprintf(&b, " %s |", v)
		}
	}
	b.WriteString(" payload | answer | the gateway |\n|---|---|")
	for range smcp.Versions() {
		b.WriteString("---|")
	}
	b.WriteString("---|---|---|\n")
	for _, k := range []smcp.Kind{smcp.Server, smcp.Routed, smcp.Notify} {
		for _, e := range smcp.Events(k) {
			fmt.Fprintf(&b, "| `%s` | %s |", e.Name, kindName(k))
			for _, v := range smcp.Versions() {
				cell := "—"
				if e.In(v) {
					cell = ackName(e.Ack(v))
				}
				fmt.Fprintf(&b, " %s |", cell)
			}
			fmt.Fprintf(&b, " %s | %s | %s |\n", message(e.NewRequest), answer(e), does(e))
		}
	}
	return b.String()
}

func kindName(k smcp.Kind) string {
	switch k {
	case smcp.Server:
		return "handled"
	case smcp.Routed:
		return "routed"
	case smcp.Notify:
		return "sent"
	}
	return "?"
}

func ackName(a smcp.AckForm) string {
	switch a {
	case smcp.NoAck:
		return "no ack"
	case smcp.AckIfAsked:
		return "`[]` if asked"
	case smcp.OfficeAck:
		return "`[true, null]` / `[false, reason]`"
	case smcp.AnswerAck:
		return "answer / flat error"
	case smcp.EmptyAck:
		return "`[]` / flat error"
	}
	return "?"
}

// message names a protocol message, linked to its entry in API.md.
func message(newMsg func() proto.Message) string {
	if newMsg == nil {
		return "—"
	}
	name := string(newMsg().ProtoReflect().Descriptor().Name())
	return "[" + name + "](API.md#" + strings.ToLower(name) + ")"
}

func answer(e *smcp.EventInfo) string {
	switch {
	case e.Kind == smcp.Routed:
		return message(e.NewAnswer) + " (the computer's)"
	case e.NewAnswer != nil:
		return message(e.NewAnswer)
	}
	return "—"
}

// does says what the gateway does with the event beyond its kind.
func does(e *smcp.EventInfo) string {
	var parts []string
	if e.Notifies != "" {
		parts = append(parts, "sends `"+e.Notifies+"` to the office")
	}
	if len(e.Fields) > 0 {
		keys := make([]string, len(e.Fields))
		for i, f := range e.Fields {
			keys[i] = "`" + f.Key + "`"
		}
		parts = append(parts, "checks "+strings.Join(keys, ", "))
	}
	if e.Deadline == smcp.ToolCallDeadline {
		parts = append(parts, "waits `timeout` + 5 s")
	} else if e.Kind == smcp.Routed {
		parts = append(parts, "waits 30 s (`--call-timeout`)")
	}
	if e.GatewayResults {
		parts = append(parts, "answers a timeout or a gone computer with a `CallToolResult`")
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, "; ")
}
