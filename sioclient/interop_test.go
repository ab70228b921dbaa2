package sioclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/internal/testdeps"
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
