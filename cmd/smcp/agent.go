package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

const agentUsage = `usage: smcp agent [flags] <subcommand> [arguments]

Acts as an agent of one office, from the terminal:

  list                       the members of the office (list_room)
  tools                      the tools of --computer, or of every computer of the office
  call TOOL [JSON]           call a tool with JSON arguments (default {}); exit 1 if it fails
  desktop                    the desktop: the windows of --computer
  finder [KEYWORD...]        the documents of --computer (--type, --offset, --limit)
  read URI                   read a window:// or dpe:// resource
  watch                      print the office's notifications until Ctrl-C (or --count)
  skills                     the skills of --computer (0.3+)
  skill NAME [REL_PATH]      a file of a skill, SKILL.md by default (0.3+); -o FILE to save it
  blob HANDLE -o FILE        download a blob handle (a skill's file, a tool result's item) to
                             FILE, 256 KiB a chunk, its sha256 checked; no file on a mismatch
  put FILE                   upload FILE to --computer (0.4); prints its name in the landing root
  evict                      free the office's agent seat, whoever holds it (an operator key
                             only: operator: true, or one with no roles, offices or name);
                             prints who held it

Output is for people; --json prints the gateway's answers as JSON (one line per answer, one per
notification for watch), for scripts. --computer may be left out when the office holds one
computer.

It speaks the gateway's Connect API (the same answers as Socket.IO, routed the same way): each
call leases the office as agent --name, so several invocations (a watch in one terminal, calls in
another) share the office, with each other and with a Socket.IO agent of the same name. An office
holds one agent: with another agent in it, use that agent's name or another office.

The agent speaks the profile of --protocol (default 0.4): a gateway that does not serve it refuses
every subcommand at once, in one line naming the versions it serves (exit 1). skills, skill, blob
and put speak Socket.IO in that profile, as agent --name, joining the office for the command's
time. Tool names from 0.3 on are
opaque exposed names: call passes them as get_tools listed them.`

// agentCLI is one invocation of `smcp agent`.
type agentCLI struct {
	api    smcpv1connect.AgentServiceClient
	url    string
	apiKey string
	// authField is the Socket.IO auth object's field the key is also sent
	// in (from 0.3).
	authField string
	name      string
	protocol  smcp.Version
	// needs is the oldest profile with the subcommand's events.
	needs    smcp.Version
	log      *slog.Logger
	office   string
	computer string
	timeout  time.Duration
	asJSON   bool
	out      io.Writer
}

func runAgent(ctx context.Context, args []string) error {
	fs := newFlags("agent", agentUsage)
	url := fs.String("url", "http://127.0.0.1:8080", "gateway base URL")
	office := fs.String("office", "", "office to act in (required)")
	name := fs.String("name", "smcp-agent", "agent name (a key bound to a name uses its own)")
	apiKeyArg, apiKeyFile := fs.addAPIKey("API key for the gateway")
	authField := fs.String("auth-field", sioclient.DefaultAuthField,
		"skills, skill, blob, put: field of the Socket.IO auth object the API key is also sent in, from protocol 0.3 (beside the x-api-key header)")
	computerName := fs.String("computer", "", "computer to ask (default: the office's only computer)")
	timeout := fs.Duration("timeout", 30*time.Second, "deadline of each request; a tool call's timeout too")
	asJSON := fs.Bool("json", false, "print the answers as JSON, for scripts")
	fileType := fs.String("type", "", "finder: only documents of this file type (pdf, md, ...)")
	offset := fs.Int("offset", 0, "finder: documents skipped")
	limit := fs.Int("limit", 20, "finder: documents per page, 1..100")
	desktopSize := fs.Int("size", -1, "desktop: at most this many windows (-1: all)")
	window := fs.String("window", "", "desktop: only this window URI")
	count := fs.Int("count", 0, "watch: stop after this many notifications (0: until Ctrl-C)")
	protocol := fs.String("protocol", agent.DefaultVersion[:strings.LastIndexByte(agent.DefaultVersion, '.')],
		"protocol profile of skills, skill, blob and put: 0.2, 0.3, 0.4 or the 0.5 draft")
	var output string
	fs.StringVar(&output, "o", "", "skill, blob: write to this file (a partial or corrupt download leaves none)")
	fs.StringVar(&output, "output", "", "the same as -o")
	fs.addLogFlags("warn")
	pos, err := fs.parseWithArgs(args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("a subcommand is required: list, tools, call, desktop, finder, read, watch, skills, skill, blob, put or evict")
	}
	if *office == "" {
		return usagef("--office is required")
	}
	if *timeout <= 0 {
		return usagef("--timeout must be positive")
	}
	version, err := smcp.ParseProfile(*protocol)
	if err != nil {
		return usagef("--protocol: %v", err)
	}
	log, err := fs.logger()
	if err != nil {
		return err
	}
	apiKey, err := fs.apiKey(*apiKeyArg, *apiKeyFile, log)
	if err != nil {
		return err
	}
	a := &agentCLI{
		api: smcpv1connect.NewAgentServiceClient(
			&http.Client{Transport: headerTransport{key: apiKey, agent: *name}}, strings.TrimRight(*url, "/")),
		url: strings.TrimRight(*url, "/"), apiKey: apiKey, authField: *authField, name: *name, protocol: version, log: log,
		office: *office, computer: *computerName, timeout: *timeout, asJSON: *asJSON, out: os.Stdout,
	}

	sub, rest := pos[0], pos[1:]
	needs := func(least smcp.Version) error {
		a.needs = least
		if a.protocol.Compare(least) < 0 {
			return usagef("%s needs --protocol %s or later (it is %s)", sub, least, a.protocol)
		}
		return nil
	}
	want := func(n int, what string) error {
		if len(rest) != n {
			return usagef("%s takes %s", sub, what)
		}
		return nil
	}
	switch sub {
	case "list":
		if err := want(0, "no arguments"); err != nil {
			return err
		}
		return a.inProfile(ctx, func() error { return a.list(ctx) })
	case "evict":
		if err := want(0, "no arguments"); err != nil {
			return err
		}
		return a.evict(ctx)
	case "tools":
		if err := want(0, "no arguments"); err != nil {
			return err
		}
		return a.inProfile(ctx, func() error { return a.tools(ctx) })
	case "call":
		if len(rest) < 1 || len(rest) > 2 {
			return usagef("call takes TOOL and optionally its JSON arguments")
		}
		params := "{}"
		if len(rest) == 2 {
			params = rest[1]
		}
		return a.inProfile(ctx, func() error { return a.call(ctx, rest[0], params) })
	case "desktop":
		if err := want(0, "no arguments"); err != nil {
			return err
		}
		return a.inProfile(ctx, func() error { return a.desktop(ctx, *desktopSize, *window) })
	case "finder":
		return a.inProfile(ctx, func() error { return a.finder(ctx, rest, *fileType, *offset, *limit) })
	case "read":
		if err := want(1, "one URI"); err != nil {
			return err
		}
		return a.inProfile(ctx, func() error { return a.read(ctx, rest[0]) })
	case "watch":
		if err := want(0, "no arguments"); err != nil {
			return err
		}
		return a.inProfile(ctx, func() error { return a.watch(ctx, *count) })
	case "skills":
		if err := want(0, "no arguments"); err != nil {
			return err
		}
		if err := needs(smcp.V03); err != nil {
			return err
		}
		return a.skills(ctx)
	case "skill":
		if len(rest) < 1 || len(rest) > 2 {
			return usagef("skill takes NAME and optionally a REL_PATH inside the skill")
		}
		if err := needs(smcp.V03); err != nil {
			return err
		}
		rel := ""
		if len(rest) == 2 {
			rel = rest[1]
		}
		return a.skill(ctx, rest[0], rel, output)
	case "blob":
		if err := want(1, "one HANDLE"); err != nil {
			return err
		}
		if err := needs(smcp.V03); err != nil {
			return err
		}
		if output == "" {
			return usagef("blob needs -o FILE (or -o - for standard output)")
		}
		return a.blob(ctx, rest[0], output)
	case "put":
		if err := want(1, "one FILE"); err != nil {
			return err
		}
		if err := needs(smcp.V04); err != nil {
			return err
		}
		return a.put(ctx, rest[0])
	}
	return usagef("unknown subcommand %q: want list, tools, call, desktop, finder, read, watch, skills, skill, blob or put", sub)
}

// inProfile runs a subcommand of the Connect API once the gateway is known
// to serve --protocol: the agent speaks that profile, and a gateway that
// would refuse it at a Socket.IO handshake refuses it here too.
func (a *agentCLI) inProfile(ctx context.Context, run func() error) error {
	cctx, cancel := a.ctx(ctx)
	defer cancel()
	var refused *sioclient.VersionError
	if err := sioclient.CheckVersion(cctx, sioclient.Options{URL: a.url, APIKey: a.apiKey, Version: a.protocol.Full()}); errors.As(err, &refused) {
		return versionRefused(a.protocol, smcp.V02, refused)
	}
	return run()
}

// headerTransport sends the API key and the agent name with every request,
// unary and streaming alike.
type headerTransport struct{ key, agent string }

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if h.key != "" {
		req.Header.Set(rpc.DefaultAPIKeyHeader, h.key)
	}
	req.Header.Set(rpc.AgentHeader, h.agent)
	return http.DefaultTransport.RoundTrip(req)
}

// rpcError says what a refused or failed call means, with the gateway's code
// and message (a Connect error already reads "permission_denied: ...").
func rpcError(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: no answer in time (--timeout): %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (a *agentCLI) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.timeout)
}

// printJSON writes m as one line of JSON with the protocol's field names.
func (a *agentCLI) printJSON(m proto.Message) error {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	_, err = fmt.Fprintf(a.out, "%s\n", b)
	return err
}

func (a *agentCLI) members(ctx context.Context) ([]*smcpv1.SessionInfo, error) {
	ctx, cancel := a.ctx(ctx)
	defer cancel()
	res, err := a.api.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: a.office})
	if err != nil {
		return nil, rpcError("list_room", err)
	}
	return res.GetSessions(), nil
}

// target is --computer, else the office's only computer.
func (a *agentCLI) target(ctx context.Context) (string, error) {
	if a.computer != "" {
		return a.computer, nil
	}
	names, err := a.computers(ctx)
	if err != nil {
		return "", err
	}
	return a.onlyComputer(names)
}

// onlyComputer is the office's one computer of names, an error when it has
// none or several.
func (a *agentCLI) onlyComputer(names []string) (string, error) {
	switch len(names) {
	case 0:
		return "", fmt.Errorf("no computer in office %q", a.office)
	case 1:
		return names[0], nil
	}
	return "", usagef("office %q holds several computers (%s): choose one with --computer", a.office, strings.Join(names, ", "))
}

func (a *agentCLI) computers(ctx context.Context) ([]string, error) {
	sessions, err := a.members(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range sessions {
		if s.GetRole() == smcp.RoleComputer {
			names = append(names, s.GetName())
		}
	}
	slices.Sort(names)
	return names, nil
}

func (a *agentCLI) list(ctx context.Context) error {
	sessions, err := a.members(ctx)
	if err != nil {
		return err
	}
	if a.asJSON {
		return a.printJSON(&smcpv1.ListRoomResponse{Sessions: sessions})
	}
	if len(sessions) == 0 {
		_, err := fmt.Fprintf(a.out, "office %s is empty\n", a.office)
		return err
	}
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tNAME\tSESSION")
	for _, s := range sessions {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.GetRole(), s.GetName(), s.GetSid())
	}
	return tw.Flush()
}

// evict frees the office's agent seat (EvictAgent). It speaks no profile:
// it acts on the seat, not in the office.
func (a *agentCLI) evict(ctx context.Context) error {
	cctx, cancel := a.ctx(ctx)
	defer cancel()
	res, err := a.api.EvictAgent(cctx, &smcpv1.EvictAgentRequest{OfficeId: a.office})
	if err != nil {
		return rpcError("evict", err)
	}
	if a.asJSON {
		return a.printJSON(res)
	}
	if len(res.GetHolders()) == 0 {
		_, err := fmt.Fprintf(a.out, "office %s had no agent\n", a.office)
		return err
	}
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EVICTED\tFRONT\tSINCE\tNODE")
	for _, h := range res.GetHolders() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.GetAgent(), h.GetFront(), h.GetSince(), h.GetNode())
	}
	return tw.Flush()
}

func (a *agentCLI) tools(ctx context.Context) error {
	names := []string{a.computer}
	if a.computer == "" {
		var err error
		if names, err = a.computers(ctx); err != nil {
			return err
		}
		if len(names) == 0 {
			return fmt.Errorf("no computer in office %q", a.office)
		}
	}
	for _, name := range names {
		rctx, cancel := a.ctx(ctx)
		res, err := a.api.GetTools(rctx, &smcpv1.GetToolsRequest{OfficeId: a.office, Computer: name})
		cancel()
		if err != nil {
			return rpcError("get_tools of "+name, err)
		}
		if a.asJSON {
			// One line per computer, naming it: the answer does not.
			b, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(res)
			var line map[string]json.RawMessage
			if err == nil {
				err = json.Unmarshal(b, &line)
			}
			if err == nil {
				line["computer"], _ = json.Marshal(name)
				b, err = json.Marshal(line)
			}
			if err != nil {
				return fmt.Errorf("encode answer: %w", err)
			}
			if _, err := fmt.Fprintf(a.out, "%s\n", b); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(a.out, "%s (%d tools)\n", name, len(res.GetTools()))
		tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
		for _, t := range res.GetTools() {
			desc, _, _ := strings.Cut(strings.TrimSpace(t.GetDescription()), "\n")
			if r := []rune(desc); len(r) > 100 {
				desc = string(r[:99]) + "…" // the whole text is in --json
			}
			fmt.Fprintf(tw, "  %s\t%s\n", t.GetName(), desc)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// errToolFailed is the exit status 1 of a tool call whose result is an error.
var errToolFailed = errors.New("the tool call failed (result is_error)")

func (a *agentCLI) call(ctx context.Context, tool, params string) error {
	var args map[string]any
	if err := json.Unmarshal([]byte(params), &args); err != nil || args == nil {
		return usagef("call %s: the arguments must be a JSON object, e.g. '{\"text\":\"hi\"}'", tool)
	}
	st, err := structpb.NewStruct(args)
	if err != nil {
		return usagef("call %s: arguments: %v", tool, err)
	}
	computer, err := a.target(ctx)
	if err != nil {
		return err
	}
	seconds := int32(max(1, a.timeout/time.Second))
	// The gateway answers a tool timeout itself, as a result; the request's
	// own deadline leaves it the time to.
	rctx, cancel := context.WithTimeout(ctx, a.timeout+5*time.Second)
	defer cancel()
	res, err := a.api.CallTool(rctx, &smcpv1.CallToolRequest{
		OfficeId: a.office, Computer: computer, ToolName: tool, Params: st, Timeout: seconds,
	})
	if err != nil {
		return rpcError("tool_call "+tool, err)
	}
	r := res.GetResult()
	if a.asJSON {
		if err := a.printJSON(r); err != nil {
			return err
		}
	} else if err := a.printContent(r); err != nil {
		return err
	}
	if r.GetIsError() {
		return errToolFailed
	}
	return nil
}

// printContent prints text blocks as text and any other block as JSON.
func (a *agentCLI) printContent(r *smcpv1.CallToolResult) error {
	printed := false
	for _, c := range r.GetContent() {
		f := c.GetFields()
		if f["type"].GetStringValue() == "text" {
			fmt.Fprintln(a.out, f["text"].GetStringValue())
		} else {
			b, err := protojson.Marshal(c)
			if err != nil {
				return fmt.Errorf("encode content: %w", err)
			}
			fmt.Fprintf(a.out, "%s\n", b)
		}
		printed = true
	}
	if !printed && r.GetStructuredContent() != nil {
		b, err := protojson.Marshal(r.GetStructuredContent())
		if err != nil {
			return fmt.Errorf("encode structured content: %w", err)
		}
		fmt.Fprintf(a.out, "%s\n", b)
	}
	return nil
}

func (a *agentCLI) desktop(ctx context.Context, size int, window string) error {
	computer, err := a.target(ctx)
	if err != nil {
		return err
	}
	req := &smcpv1.GetDesktopRequest{OfficeId: a.office, Computer: computer}
	if size >= 0 {
		req.DesktopSize = proto.Int32(int32(size))
	}
	if window != "" {
		req.Window = proto.String(window)
	}
	rctx, cancel := a.ctx(ctx)
	defer cancel()
	res, err := a.api.GetDesktop(rctx, req)
	if err != nil {
		return rpcError("get_desktop", err)
	}
	if a.asJSON {
		return a.printJSON(res)
	}
	if len(res.GetDesktops()) == 0 {
		_, err := fmt.Fprintf(a.out, "%s: no windows\n", computer)
		return err
	}
	for i, w := range res.GetDesktops() {
		if i > 0 {
			fmt.Fprintln(a.out)
		}
		fmt.Fprintln(a.out, strings.TrimRight(w, "\n"))
	}
	return nil
}

func (a *agentCLI) finder(ctx context.Context, keywords []string, fileType string, offset, limit int) error {
	computer, err := a.target(ctx)
	if err != nil {
		return err
	}
	req := &smcpv1.GetFinderRequest{OfficeId: a.office, Computer: computer, Keywords: keywords,
		Offset: proto.Int32(int32(offset)), Limit: proto.Int32(int32(limit))}
	if fileType != "" {
		req.FileType = proto.String(fileType)
	}
	rctx, cancel := a.ctx(ctx)
	defer cancel()
	res, err := a.api.GetFinder(rctx, req)
	if err != nil {
		return rpcError("get_finder", err)
	}
	if a.asJSON {
		return a.printJSON(res)
	}
	docs := res.GetDocuments()
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "URI\tTYPE\tPAGES\tTITLE")
	for _, d := range docs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", d.GetUri(), d.GetFileType(), d.GetPageCount(), d.GetTitle())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.out, "%d of %d documents (offset %d)\n", len(docs), res.GetTotalCount(), offset)
	return err
}

func (a *agentCLI) read(ctx context.Context, uri string) error {
	computer, err := a.target(ctx)
	if err != nil {
		return err
	}
	rctx, cancel := a.ctx(ctx)
	defer cancel()
	res, err := a.api.ReadResource(rctx, &smcpv1.ReadResourceRequest{OfficeId: a.office, Computer: computer, Uri: uri})
	if err != nil {
		return rpcError("read_resource "+uri, err)
	}
	if a.asJSON {
		return a.printJSON(res)
	}
	for _, c := range res.GetContents() {
		switch {
		case c.Text != nil:
			fmt.Fprintln(a.out, strings.TrimRight(c.GetText(), "\n"))
		case c.Blob != nil:
			fmt.Fprintf(a.out, "%s: binary content (%s, %d base64 characters); --json prints it\n", c.GetUri(), c.GetMimeType(), len(c.GetBlob()))
		}
	}
	return nil
}

// watch prints the office's notifications until ctx ends or count arrived.
func (a *agentCLI) watch(ctx context.Context, count int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := a.api.WatchOffice(ctx, &smcpv1.WatchOfficeRequest{OfficeId: a.office})
	if err != nil {
		return rpcError("watch", err)
	}
	defer func() { _ = stream.Close() }()
	seen := 0
	for stream.Receive() {
		m := stream.Msg()
		if a.asJSON {
			if err := a.printJSON(m); err != nil {
				return err
			}
		} else if _, err := fmt.Fprintf(a.out, "%s %s %s\n", time.Now().Format("15:04:05"), m.GetEvent(), describeNotification(m)); err != nil {
			return err
		}
		if seen++; count > 0 && seen >= count {
			return nil
		}
	}
	if err := stream.Err(); err != nil && ctx.Err() == nil {
		return rpcError("watch", err)
	}
	return nil
}

// describeNotification is the human line of a notification: who entered or
// left, which computer changed.
func describeNotification(m *smcpv1.WatchOfficeResponse) string {
	switch n := m.GetNotification().(type) {
	case *smcpv1.WatchOfficeResponse_EnterOffice:
		return describeMember(n.EnterOffice.GetAgent(), n.EnterOffice.GetComputer())
	case *smcpv1.WatchOfficeResponse_LeaveOffice:
		return describeMember(n.LeaveOffice.GetAgent(), n.LeaveOffice.GetComputer())
	case *smcpv1.WatchOfficeResponse_UpdateConfig:
		return "computer " + n.UpdateConfig.GetComputer()
	case *smcpv1.WatchOfficeResponse_UpdateToolList:
		return "computer " + n.UpdateToolList.GetComputer()
	case *smcpv1.WatchOfficeResponse_UpdateDesktop:
		return "computer " + n.UpdateDesktop.GetComputer()
	case *smcpv1.WatchOfficeResponse_UpdateFinder:
		return "computer " + n.UpdateFinder.GetComputer()
	case *smcpv1.WatchOfficeResponse_ToolCallCancel:
		return "agent " + n.ToolCallCancel.GetAgent() + " request " + n.ToolCallCancel.GetReqId()
	}
	return ""
}

func describeMember(agent, computer string) string {
	if computer != "" {
		return "computer " + computer
	}
	return "agent " + agent
}
