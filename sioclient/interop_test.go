package sioclient_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/internal/testdeps"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// debianPython is the interpreter Debian's python3-socketio is installed
// for (a python3 earlier on PATH, pyenv's say, does not see it).
const debianPython = "/usr/bin/python3"

// pyServer is testdata/pysio_server.py running: a python-socketio server
// that answers like the A2C-SMCP reference server.
type pyServer struct {
	URL   string
	lines chan map[string]any
}

// startPyServer starts the server in mode "aiohttp" or "asgi". Without
// python3-socketio (and uvicorn for asgi) the test is skipped (testdeps).
func startPyServer(t *testing.T, mode string, extra ...string) *pyServer {
	t.Helper()
	modules := "socketio, aiohttp"
	pkgs := "python3-socketio python3-aiohttp"
	if mode == "asgi" {
		modules, pkgs = "socketio, uvicorn", "python3-socketio python3-uvicorn"
	}
	testdeps.Python(t, modules, pkgs)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, debianPython, append([]string{"testdata/pysio_server.py", mode}, extra...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &pyServer{lines: make(chan map[string]any, 64)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(s.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("python server printed %q", sc.Text())
				continue
			}
			s.lines <- m
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-read
		_ = cmd.Wait()
	})
	first := s.next(t, 20*time.Second)
	port, ok := first["listening"].(float64)
	if !ok {
		t.Fatalf("python server: first line %v", first)
	}
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", int(port))
	return s
}

func (s *pyServer) next(t *testing.T, wait time.Duration) map[string]any {
	t.Helper()
	select {
	case m, ok := <-s.lines:
		if !ok {
			t.Fatal("python server exited")
		}
		return m
	case <-time.After(wait):
		t.Fatal("python server printed nothing in time")
	}
	return nil
}

// Our computer joins a python-socketio server, on aiohttp (the Python SDK's
// default setup) and under ASGI, and answers the server's client: requests.
func TestComputerJoinsPythonSocketIO(t *testing.T) {
	for _, mode := range []string{"aiohttp", "asgi"} {
		t.Run(mode, func(t *testing.T) {
			py := startPyServer(t, mode)
			c, err := computer.New(computer.Options{Name: "pc", Config: &config.Config{}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			l, err := c.Connect(ctx, computer.Gateway{URL: py.URL, Office: "py-office", APIKey: "py-key", Dial: sioclient.Options{Transports: sioclient.TransportsPollingFirst}})
			if err != nil {
				t.Fatalf("join the python-socketio server on %s: %v", mode, err)
			}
			defer l.Close()
			// The session opened as socket.io-client opens it: a
			// long-polling GET carrying a2c_version; the CONNECT's auth
			// has no role (the key goes in the header here).
			conn, _ := py.next(t, 10*time.Second)["connect"].(map[string]any)
			q, err := url.ParseQuery(fmt.Sprint(conn["query"]))
			if err != nil || conn["method"] != "GET" || q.Get("transport") != "polling" || q.Get("a2c_version") == "" || q.Get("sid") != "" {
				t.Errorf("the session's first request: %v", conn)
			}
			if auth, _ := conn["auth"].(map[string]any); auth["role"] != nil {
				t.Errorf("auth carries a role: %v", auth)
			}
			joined := py.next(t, 10*time.Second)
			j, _ := joined["joined"].(map[string]any)
			if j["role"] != "computer" || j["name"] != "pc" || j["office_id"] != "py-office" {
				t.Fatalf("server saw the join %v", joined)
			}
			answers := map[string]map[string]any{}
			for len(answers) < 2 {
				m := py.next(t, 15*time.Second)
				ev, _ := m["answer"].(string)
				data, _ := m["data"].(map[string]any)
				answers[ev] = data
			}
			if tools := answers["client:get_tools"]; tools["req_id"] != "r1" || tools["tools"] == nil {
				t.Errorf("get_tools answer %v", tools)
			}
			if desk := answers["client:get_desktop"]; desk["req_id"] != "r2" {
				t.Errorf("get_desktop answer %v", desk)
			}
			// And the session upgraded to WebSocket (python-engineio's
			// upgrade: probe, NOOP to the pending poll, upgrade packet).
			testwait.Poll(15*time.Second, func() bool { return l.Transport() == "websocket" })
			if tr := l.Transport(); tr != "websocket" {
				t.Errorf("transport %q; want the upgrade to websocket", tr)
			}
		})
	}
}

// A python-socketio server on aiohttp refusing the protocol version at the
// handshake (400, X-A2C-Error-Code 4008) stops the computer at once with
// that error.
func TestComputerVersionRefusedByPythonServer(t *testing.T) {
	py := startPyServer(t, "aiohttp", "--refuse-version")
	c, err := computer.New(computer.Options{Name: "pc", Config: &config.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err = c.Run(ctx, computer.Gateway{URL: py.URL, Office: "py-office", APIKey: "py-key", Dial: sioclient.Options{Transports: sioclient.TransportsPollingFirst}})
	if e, ok := smcp.AsError(err); !ok || e.Code != smcp.CodeVersionMismatch {
		t.Fatalf("Run: %v; want the 4008 refusal", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("refusal reported after %v", took)
	}
}

// A python-socketio server authenticating as the Python SDK's default
// provider does (the key in auth.token only, a refusal raised as
// ConnectionRefusedError), on aiohttp and under ASGI: our 0.4 computer
// joins it and serves it (tools, a tool call, get_skill, a blob drained by
// the server); with a wrong key, Run ends at once
// with the server's message word for word, after one attempt. It used to
// send the key in the header only, and retried such a refusal forever
// without saying why.
func TestComputerJoinsPythonSDKAuth(t *testing.T) {
	for _, mode := range []string{"aiohttp", "asgi"} {
		t.Run(mode, func(t *testing.T) {
			py := startPyServer(t, mode, "--sdk-auth")
			mcpSrv := httptest.NewServer(testmcp.New("s", testmcp.Options{}).HTTPHandler())
			defer mcpSrv.Close()
			server, err := config.NewServer("tools", map[string]any{"url": mcpSrv.URL})
			if err != nil {
				t.Fatal(err)
			}
			skillDir := t.TempDir()
			big := []byte(strings.Repeat("a line of the skill's reference\n", 3000)) // over the inline budget
			for name, data := range map[string][]byte{"SKILL.md": []byte("---\nname: report\ndescription: Reports.\n---\n# Report\n"), "big.md": big} {
				if err := os.MkdirAll(filepath.Join(skillDir, "report"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(skillDir, "report", name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c, err := computer.New(computer.Options{Name: "pc", Protocol: computer.Protocol04, Confirm: tools.ConfirmAuto,
				Config: &config.Config{Servers: map[string]*config.Server{"tools": server}}, SkillDirs: []string{skillDir}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitReady(ctx); err != nil {
				t.Fatal(err)
			}
			l, err := c.Connect(ctx, computer.Gateway{URL: py.URL, Office: "py-office", APIKey: "py-key"})
			if err != nil {
				t.Fatalf("join the SDK-authenticated server on %s: %v", mode, err)
			}
			defer l.Close()
			conn, _ := py.next(t, 10*time.Second)["connect"].(map[string]any)
			if auth, _ := conn["auth"].(map[string]any); auth["token"] != "py-key" {
				t.Errorf("the CONNECT's auth: %v", conn["auth"])
			}
			if j, _ := py.next(t, 10*time.Second)["joined"].(map[string]any); j["name"] != "pc" || j["office_id"] != "py-office" {
				t.Fatalf("server saw the join %v", j)
			}
			answers := map[string]map[string]any{}
			for len(answers) < 2 {
				m := py.next(t, 15*time.Second)
				ev, _ := m["answer"].(string)
				data, _ := m["data"].(map[string]any)
				answers[ev] = data
			}
			if tools := answers["client:get_tools"]; tools["req_id"] != "r1" || tools["tools"] == nil {
				t.Errorf("get_tools answer %v", tools)
			}
			// As an SDK agent goes on: a tool call, get_skill, a blob drained.
			call, _ := py.next(t, 15*time.Second)["data"].(map[string]any)
			if content, _ := call["content"].([]any); call["isError"] != false || len(content) != 1 || content[0].(map[string]any)["text"] != "s: hi" {
				t.Errorf("tool_call answer %v", call)
			}
			skill, _ := py.next(t, 15*time.Second)["data"].(map[string]any)
			if skill["blob_handle"] == nil || skill["total_size"] != float64(len(big)) {
				t.Errorf("get_skill answer %v", skill)
			}
			drained, _ := py.next(t, 30*time.Second)["drained"].(map[string]any)
			sum := sha256.Sum256(big)
			if want := hex.EncodeToString(sum[:]); drained["sha256"] != want || drained["said"] != want || drained["size"] != float64(len(big)) {
				t.Errorf("blob drained by the python server: %v", drained)
			}

			// A wrong key: the server's refusal, word for word, at once.
			bad, err := computer.New(computer.Options{Name: "pc2", Config: &config.Config{}, Protocol: computer.Protocol04})
			if err != nil {
				t.Fatal(err)
			}
			err = bad.Run(ctx, computer.Gateway{URL: py.URL, Office: "py-office", APIKey: "wrong-key"})
			var re *sioclient.RefusedError
			if !errors.As(err, &re) || re.Message != "Invalid connection request" || !strings.Contains(err.Error(), "Invalid connection request") {
				t.Fatalf("Run with a wrong key: %v; want the server's refusal", err)
			}
			if r, _ := py.next(t, 10*time.Second)["refused"].(map[string]any); r == nil {
				t.Fatal("the server saw no refused connect")
			}
			select {
			case m := <-py.lines:
				t.Errorf("after the refusal the server saw %v: the refusal was retried", m)
			default:
			}
		})
	}
}

// The Go agent sends its key in auth.token too, and in the field named by
// AuthField: against the SDK-authenticated server, the default field
// joins and another field is refused with the server's message.
func TestAgentAuthFieldAgainstPythonSDKAuth(t *testing.T) {
	py := startPyServer(t, "aiohttp", "--sdk-auth")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := agent.Dial(ctx, sioclient.Options{URL: py.URL, APIKey: "py-key"}, "bot")
	if err != nil {
		t.Fatalf("agent with the default auth field: %v", err)
	}
	defer a.Close()
	if err := a.Join(ctx, "py-office"); err != nil {
		t.Fatal(err)
	}
	conn, _ := py.next(t, 10*time.Second)["connect"].(map[string]any)
	if auth, _ := conn["auth"].(map[string]any); auth["token"] != "py-key" {
		t.Errorf("the CONNECT's auth: %v", conn["auth"])
	}
	_, err = agent.Dial(ctx, sioclient.Options{URL: py.URL, APIKey: "py-key", AuthField: "secret"}, "bot2")
	var re *sioclient.RefusedError
	if !errors.As(err, &re) || re.Message != "Invalid connection request" {
		t.Fatalf("agent with auth field secret: %v; want the server's refusal", err)
	}
}
