package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/internal/testdeps"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestDemo runs `smcp demo` as a child process (this test binary playing
// smcp; the document server is its own child, the binary re-executed as
// `smcp docs`) on a free port over a copy of the example documents. It runs
// the commands the banner prints: the buf curl lines through a Connect Go
// client (gRPC), GetFinder once through buf curl itself, the Node.js agent
// snippet with the reference socket.io-client; it watches the office while a
// file changes; then Ctrl-C (SIGINT) stops everything cleanly: the computer
// leaves its office, the document server process ends, the demo exits 0.
func TestDemo(t *testing.T) {
	root := copyExamples(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	args, err := json.Marshal([]string{"demo", "--listen", "127.0.0.1:0", "--root", root, "--log-level", "warn"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	// No SMCP_API_KEY from the environment: the demo key is what is tested.
	cmd.Env = append(withoutEnv(os.Environ(), "SMCP_API_KEY"), "SMCP_TEST_MAIN=1", "SMCP_TEST_ARGS="+string(args))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	banner := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if sc.Text() == "Ctrl-C stops the demo." {
				banner <- b.String()
				b.Reset()
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	var text string
	select {
	case text = <-banner:
	case err := <-exited:
		t.Fatalf("smcp demo exited before its banner: %v\n%s", err, stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("no banner from smcp demo\n%s", stderr.String())
	}
	if !strings.Contains(text, "API key   "+demoAPIKey+"  (the public demo key; the gateway listens on loopback only") ||
		!strings.Contains(text, "office    demo") || !strings.Contains(text, "computer  demo-pc") ||
		!strings.Contains(text, "(7 documents at dpe://com.example.docs)") {
		t.Fatalf("banner:\n%s", text)
	}

	checkMCPLine(t, text)
	calls := map[string][]bufCurlLine{}
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, "tools/buf curl ") {
			c := parseBufCurl(t, line)
			calls[c.method] = append(calls[c.method], c)
		}
	}
	if len(calls["GetFinder"]) != 1 || len(calls["ReadResource"]) != 3 || len(calls["CallTool"]) != 1 || len(calls["WatchOffice"]) != 1 {
		t.Fatalf("banner commands %v:\n%s", calls, text)
	}
	base := calls["GetFinder"][0].base
	if !strings.Contains(text, "console   "+base+"/console/  (") {
		t.Fatalf("banner gives no console URL at %s/console/:\n%s", base, text)
	}
	checkConsolePage(t, base+"/console/")
	client := smcpv1connect.NewAgentServiceClient(h2cClient(t), base, connect.WithGRPC(),
		connecttest.Headers(calls["GetFinder"][0].headers...))

	finder := callFromBanner(t, calls["GetFinder"][0], &smcpv1.GetFinderRequest{}, client.GetFinder)
	if finder.GetTotalCount() != 7 || len(finder.GetDocuments()) != 7 {
		t.Fatalf("GetFinder: %v", finder)
	}
	titles := map[string]bool{}
	for _, d := range finder.GetDocuments() {
		titles[d.GetTitle()] = true
	}
	if !titles["Budget 2026"] || !titles["Service Agreement A1"] {
		t.Errorf("GetFinder titles %v", titles)
	}

	// Levels 1, 2 and 3 of the report, as the banner orders them.
	reads := calls["ReadResource"]
	level1 := readText(t, callFromBanner(t, reads[0], &smcpv1.ReadResourceRequest{}, client.ReadResource))
	var pages struct {
		Title string            `json:"title"`
		Pages []json.RawMessage `json:"pages"`
	}
	if err := json.Unmarshal([]byte(level1), &pages); err != nil || pages.Title != "Q3 2026 Operations Report" || len(pages.Pages) != 4 {
		t.Errorf("level 1 with depth=pages: %s (%v)", level1, err)
	}
	level2 := readText(t, callFromBanner(t, reads[1], &smcpv1.ReadResourceRequest{}, client.ReadResource))
	if !strings.HasPrefix(level2, "## Revenue\n") || !strings.Contains(level2, "| East | 1,120 | 1,310 | +17.0% |") {
		t.Errorf("level 2 as markdown:\n%s", level2)
	}
	level3 := readText(t, callFromBanner(t, reads[2], &smcpv1.ReadResourceRequest{}, client.ReadResource))
	var el struct {
		Category string `json:"category"`
		Content  struct {
			TotalRows int `json:"total_rows"`
		} `json:"content"`
	}
	if err := json.Unmarshal([]byte(level3), &el); err != nil || el.Category != "table" || el.Content.TotalRows != 4 {
		t.Errorf("level 3: %s (%v)", level3, err)
	}

	search := callFromBanner(t, calls["CallTool"][0], &smcpv1.CallToolRequest{}, client.CallTool)
	hits := search.GetResult().GetStructuredContent().GetStructValue().GetFields()["hits"].GetListValue().GetValues()
	if search.GetResult().GetIsError() || len(hits) == 0 ||
		hits[0].GetStructValue().GetFields()["document_uri"].GetStringValue() == "" {
		t.Errorf("search_documents: %v", search.GetResult())
	}
	// The demo's computer speaks 0.4: its tools go by bundle id, and the
	// office lists it with that version.
	if !strings.Contains(calls["CallTool"][0].body, `"tool_name":"docs__search_documents"`) {
		t.Errorf("the banner's CallTool does not use the exposed name: %s", calls["CallTool"][0].body)
	}
	room, err := client.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: demoOffice})
	if err != nil {
		t.Fatal(err)
	}
	joined := false
	for _, s := range room.GetSessions() {
		if s.GetName() == demoComputer {
			joined = true
			if !strings.HasPrefix(s.GetA2CVersion(), "0.4.") {
				t.Errorf("the demo computer joined as %q, want 0.4", s.GetA2CVersion())
			}
		}
	}
	if !joined {
		t.Errorf("ListRoom has no %s: %v", demoComputer, room.GetSessions())
	}

	// The banner's smcp agent commands, as printed (watch aside: it does not end).
	t.Run("smcp agent", func(t *testing.T) {
		want := map[string]string{"finder": "7 of 7 documents", "read": `"title": "Q3 2026 Operations Report"`, "call": `hits for "`}
		ran := 0
		key := ""
		for line := range strings.SplitSeq(text, "\n") {
			if k, ok := strings.CutPrefix(line, "export SMCP_API_KEY="); ok {
				key = k
			}
			if !strings.HasPrefix(line, "go run ./cmd/smcp agent ") {
				continue
			}
			if strings.Contains(line, "api-key") {
				t.Errorf("a key on the command line: %s", line)
			}
			words := shellWords(t, line)[3:] // agent --url ... SUBCOMMAND ...
			sub := ""
			for _, w := range []string{"finder", "read", "call", "watch"} {
				if slices.Contains(words, w) {
					sub = w
				}
			}
			if sub == "watch" {
				continue
			}
			cmd := smcpCommand(t, words...)
			cmd.Env = append(cmd.Env, "SMCP_API_KEY="+key)
			out, err := cmd.Output()
			if err != nil || want[sub] == "" || !strings.Contains(string(out), want[sub]) {
				t.Errorf("%s: %v\n%s", line, err, out)
			}
			ran++
		}
		if ran != 3 {
			t.Errorf("%d smcp agent commands in the banner, want finder, read and call", ran)
		}
	})

	// buf curl itself, as a person would paste it, from the repository root.
	t.Run("buf curl", func(t *testing.T) {
		line := calls["GetFinder"][0].line
		bctx, bcancel := context.WithTimeout(ctx, 8*time.Minute) // the first build of buf takes minutes
		defer bcancel()
		sh := exec.CommandContext(bctx, "sh", "-c", line)
		sh.Dir = filepath.Join("..", "..")
		out, err := sh.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("%s: %v\n%s%s", line, err, out, ee.Stderr)
			}
			t.Fatalf("%s: %v", line, err)
		}
		var res smcpv1.GetFinderResponse
		if err := protojson.Unmarshal(out, &res); err != nil || res.GetTotalCount() != 7 {
			t.Fatalf("buf curl GetFinder: %v\n%s", err, out)
		}
	})

	t.Run("node agent", func(t *testing.T) {
		dir := nodetest.Require(t, filepath.Join("..", "..", "test", "interop"))
		script := section(text, "# A Socket.IO agent in Node.js", "# The same with")
		tmp := t.TempDir()
		if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(tmp, "node_modules")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, "agent.mjs"), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		nctx, ncancel := context.WithTimeout(ctx, time.Minute)
		defer ncancel()
		node := exec.CommandContext(nctx, "node", "agent.mjs")
		node.Dir = tmp
		out, err := node.CombinedOutput() // the script ends by itself
		if err != nil {
			t.Fatalf("node agent.mjs: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "xlsx Budget 2026 dpe://com.example.docs/") || !strings.Contains(string(out), `hits for "revenue"`) {
			t.Errorf("node agent output:\n%s", out)
		}
	})

	// The Python SDK snippet. PyPI is unreachable here, so the SDK itself
	// cannot run: what the snippet gives the SDK (URL, Engine.IO path, the
	// key the SDK's DefaultAgentAuthProvider puts in auth.token, agent and
	// office names) drives python-socketio's own client, as the 0.4 SDK
	// drives it (a2c_version 0.4.0 from its constant, polling first): it
	// connects, joins, and lists the office with the demo computer in it.
	t.Run("python snippet", func(t *testing.T) {
		script := section(text, "# The same with the A2C-SMCP Python SDK", "Ctrl-C stops the demo.")
		m := regexp.MustCompile(`DefaultAgentAuthProvider\(agent_id="([^"]+)", office_id="([^"]+)", api_key="([^"]+)"\)`).FindStringSubmatch(script)
		u := regexp.MustCompile(`connect_to_server\("([^"]+)", socketio_path="([^"]+)"\)`).FindStringSubmatch(script)
		j := regexp.MustCompile(`join_office\(office_id="([^"]+)", agent_name="([^"]+)"\)`).FindStringSubmatch(script)
		if m == nil || u == nil || j == nil || j[1] != m[2] || j[2] != m[1] {
			t.Fatalf("python snippet:\n%s", script)
		}
		testdeps.Python(t, "socketio, aiohttp", "python3-socketio python3-aiohttp")
		pctx, pcancel := context.WithTimeout(ctx, time.Minute)
		defer pcancel()
		py := exec.CommandContext(pctx, "/usr/bin/python3", "-c", pySnippetClient, u[1], u[2], m[3], m[1], m[2])
		out, err := py.CombinedOutput()
		if err != nil {
			t.Fatalf("python-socketio client: %v\n%s", err, out)
		}
		var room struct {
			Transport string `json:"transport"`
			Sessions  []struct {
				Name, Role, A2CVersion string
			} `json:"sessions"`
		}
		if err := json.Unmarshal(out, &room); err != nil {
			t.Fatalf("python-socketio client printed %s", out)
		}
		seen := map[string]string{}
		for _, s := range room.Sessions {
			seen[s.Role+":"+s.Name] = s.A2CVersion
		}
		if seen["computer:"+demoComputer] == "" || seen["agent:"+m[1]] != "0.4.0" {
			t.Errorf("list_room from python-socketio: %s", out)
		}
	})

	// The watch command: an edit under the root reaches it.
	wreq := &smcpv1.WatchOfficeRequest{}
	if err := protojson.Unmarshal([]byte(calls["WatchOffice"][0].body), wreq); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	stream, err := client.WatchOffice(wctx, wreq)
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.ResponseHeader() // the watch is registered
	notes := make(chan *smcpv1.WatchOfficeResponse, 64)
	go func() {
		defer close(notes)
		for stream.Receive() {
			notes <- stream.Msg()
		}
	}()
	if err := os.WriteFile(filepath.Join(root, "quarterly-report.md"), []byte("# Q3 2026 Operations Report\n\nRewritten.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitNote(t, notes, smcp.NotifyUpdateFinder, "demo-pc")

	// Ctrl-C: the computer leaves (the watch sees it), the document server
	// ends, the demo exits 0.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitNote(t, notes, smcp.NotifyLeaveOffice, "demo-pc")
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("smcp demo after SIGINT: %v\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("smcp demo did not stop after SIGINT\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "smcp demo: stopped") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	if runtime.GOOS == "linux" {
		if pids := processesWith(t, root); len(pids) > 0 {
			t.Errorf("document server processes left over %s: %v", root, pids)
		}
	}
}

// bufCurlLine is one printed buf curl command, taken apart.
type bufCurlLine struct {
	line, method, base, body string
	headers                  []string // name, value, ...
}

func parseBufCurl(t *testing.T, line string) bufCurlLine {
	t.Helper()
	words := shellWords(t, line)
	c := bufCurlLine{line: line}
	for i := 0; i < len(words); i++ {
		switch w := words[i]; {
		case w == "-H" && i+1 < len(words):
			name, value, _ := strings.Cut(words[i+1], ":")
			c.headers = append(c.headers, name, strings.TrimSpace(value))
			i++
		case w == "-d" && i+1 < len(words):
			c.body = words[i+1]
			i++
		case strings.HasPrefix(w, "http://"):
			path := "/smcp.v1.AgentService/"
			i := strings.Index(w, path)
			if i < 0 {
				t.Fatalf("URL %s is not an AgentService method", w)
			}
			c.base, c.method = w[:i], w[i+len(path):]
		}
	}
	if c.method == "" || c.body == "" || len(c.headers) == 0 {
		t.Fatalf("cannot take apart %q", line)
	}
	return c
}

// shellWords splits a command line as sh does for the quoting the banner
// uses: single and double quotes, no escapes, no expansion.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// callFromBanner decodes the command's JSON body into req, as buf curl does,
// and makes the call.
func callFromBanner[Req, Res any, PReq interface {
	*Req
	proto.Message
}](t *testing.T, c bufCurlLine, req PReq, call func(context.Context, *Req) (*Res, error)) *Res {
	t.Helper()
	if err := protojson.Unmarshal([]byte(c.body), req); err != nil {
		t.Fatalf("%s body %s: %v", c.method, c.body, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := call(ctx, req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.body, err)
	}
	return res
}

func readText(t *testing.T, res *smcpv1.ReadResourceResponse) string {
	t.Helper()
	if len(res.GetContents()) != 1 {
		t.Fatalf("read: %d contents", len(res.GetContents()))
	}
	return res.GetContents()[0].GetText()
}

func waitNote(t *testing.T, notes <-chan *smcpv1.WatchOfficeResponse, event, computer string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case n, ok := <-notes:
			if !ok {
				t.Fatalf("watch ended before %s", event)
			}
			if n.GetEvent() != event {
				continue
			}
			got := n.GetUpdateFinder().GetComputer() + n.GetLeaveOffice().GetComputer()
			if got != computer {
				t.Fatalf("%s for computer %q, want %q", event, got, computer)
			}
			return
		case <-deadline:
			t.Fatalf("no %s on the watch", event)
		}
	}
}

// section is the text between the line starting with from and the line
// starting with to.
func section(text, from, to string) string {
	_, after, ok := strings.Cut(text, "\n"+from)
	if !ok {
		return ""
	}
	_, after, _ = strings.Cut(after, "\n")
	body, _, _ := strings.Cut(after, "\n"+to)
	return body
}

func h2cClient(t *testing.T) *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// copyExamples copies examples/docs into a fresh folder.
func copyExamples(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("..", "..", "examples", "docs")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatalf("copying examples: %v", err)
	}
	return dst
}

func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// processesWith lists the processes whose command line mentions s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) {
			pids = append(pids, fmt.Sprintf("%s: %q", e.Name(), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
	}
	return pids
}

func TestDemoRefuses(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	root := copyExamples(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing root", []string{"--root", filepath.Join(t.TempDir(), "missing")}, "no such file"},
		{"root is a file", []string{"--root", filepath.Join(root, "inventory.json")}, "is not a folder"},
		{"no documents", []string{"--root", t.TempDir()}, "holds no file the document server reads"},
		{"port in use", []string{"--root", root, "--listen", busy.Addr().String()}, "another demo"},
		{"stray argument", []string{"now"}, "unexpected arguments"},
		{"bad log level", []string{"--log-level", "loud"}, "--log-level"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := runDemo(context.Background(), tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("runDemo %q: %v, want an error saying %q", tc.args, err, tc.want)
			}
		})
	}
}

// checkConsolePage fetches the console's page: the URL the banner prints
// serves it (gateway/console's browser test drives the page itself).
func checkConsolePage(t *testing.T, url string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("console page: %v", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK || !strings.Contains(string(body), "<title>SMCP console</title>") {
		t.Fatalf("console page %s: %d %v\n%.300s", url, res.StatusCode, err, body)
	}
}

// The banner's commands run bin/smcp when the demo is that binary (make run),
// and go run otherwise.
func TestSelfCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	built := filepath.Join(dir, "bin", "smcp")
	other := filepath.Join(dir, "smcp-elsewhere")
	for _, f := range []string{built, other} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := selfCommandFor(built, dir); got != "bin/smcp" {
		t.Errorf("the binary make build made: %q", got)
	}
	if got := selfCommandFor(other, dir); got != "go run ./cmd/smcp" {
		t.Errorf("another binary: %q", got)
	}
	if got := selfCommandFor(built, t.TempDir()); got != "go run ./cmd/smcp" {
		t.Errorf("run from another directory: %q", got)
	}
}

// pySnippetClient is python-socketio's client doing what the demo's Python
// SDK snippet asks of the SDK: argv is url, path, key, agent, office.
const pySnippetClient = `
import asyncio, json, sys
import socketio

url, path, key, agent, office = sys.argv[1:6]

async def main():
    sio = socketio.AsyncClient(reconnection=False)
    await sio.connect(url + "?a2c_version=0.4.0", auth={"token": key}, namespaces=["/smcp"],
                      socketio_path=path, transports=["polling", "websocket"], wait_timeout=20)
    ok = await sio.call("server:join_office", {"role": "agent", "name": agent, "office_id": office},
                        namespace="/smcp", timeout=20)
    if ok is not True and not (isinstance(ok, (list, tuple)) and ok and ok[0] is True):
        raise SystemExit("join refused: %r" % (ok,))
    room = await sio.call("server:list_room", {"agent": agent, "req_id": "1", "office_id": office},
                          namespace="/smcp", timeout=20)
    sessions = [{"Name": s.get("name"), "Role": s.get("role"), "A2CVersion": s.get("a2c_version")}
                for s in room.get("sessions", [])]
    print(json.dumps({"transport": sio.transport(), "sessions": sessions}))
    await sio.disconnect()

asyncio.run(main())
`
