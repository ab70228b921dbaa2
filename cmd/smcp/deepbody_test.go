package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
)

// procStatus reads a field of /proc/PID/status in bytes (VmRSS, VmHWM).
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", field, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// startGatewayProcess runs `smcp gateway` as a child on a free loopback
// port with args (and env added to its environment), waits until it is
// ready and returns its URL and pid: memory is measured on the gateway
// alone, not on a test process holding clients too.
func startGatewayProcess(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	addr := freeAddr(t)
	cmd := smcpCommand(t, append([]string{"gateway", "--listen", addr, "--log-level", "warn"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitFor(t, ctx, "gateway ready", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base, cmd.Process.Pid
}

// deepBody is a CallTool request for office-a whose params nest lists 9,000
// deep, and the answer a key of office-b only must get.
type deepBody struct {
	contentType string
	body        []byte
	want        string
}

// deepBodies: as JSON (~18 KB) and as binary protobuf, each also broken at
// its end so that no decoder accepts it (403 shows it was not decoded);
// and JSON with office_id after the deep params, which the first pass must
// read past: refused at its depth bound (400) before the office is known.
func deepBodies(t *testing.T) map[string]deepBody {
	t.Helper()
	const depth = 9000
	lists := strings.Repeat("[", depth) + strings.Repeat("]", depth)
	js := `{"office_id":"office-a","computer":"pc","tool_name":"echo","params":{"a":` + lists + `}}`
	v := structpb.NewListValue(&structpb.ListValue{})
	for range depth - 1 {
		v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
	}
	bin, err := proto.Marshal(&smcpv1.CallToolRequest{OfficeId: "office-a", Computer: "pc", ToolName: "echo",
		Params: &structpb.Struct{Fields: map[string]*structpb.Value{"a": v}}})
	if err != nil {
		t.Fatal(err)
	}
	const jsonType, protoType, denied = "application/json", "application/proto", "permission_denied"
	return map[string]deepBody{
		"json":             {jsonType, []byte(js), denied},
		"json broken":      {jsonType, []byte(js[:len(js)-1] + `,}`), denied},
		"proto":            {protoType, bin, denied},
		"proto broken":     {protoType, append(bytes.Clone(bin), 0x22, 0x03, 0xff, 0xff, 0xff), denied}, // params again, not a Struct
		"json office last": {jsonType, []byte(`{"computer":"pc","params":{"a":` + lists + `},"office_id":"office-a"}`), "invalid_argument"},
	}
}

// 64 callers at once each send deep-nested Connect bodies (18 KB of JSON
// lists 9,000 deep, and the same in binary protobuf) for office-a, with a
// key of office-b only, to a real `smcp gateway` process: every one is
// refused 403 (permission_denied), including bodies that no decoder
// accepts (which a decoded request would answer 400): the office was
// checked before decoding. A body naming its office after the deep part
// is refused 400 by the first pass's depth bound. The gateway's peak resident set (VmHWM) stays
// within 128 MiB of its resident set before them. Before the office check
// came first, such bodies took the gateway to ~1 GiB.
func TestDeepBodiesRefusedBeforeDecoding(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(keys, []byte("keys:\n"+
		"  - {key: key-office-a, id: a, roles: [agent], offices: [office-a]}\n"+
		"  - {key: key-office-b, id: b, roles: [agent], offices: [office-b]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, pid := startGatewayProcess(t, nil, "--keys-file", keys)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := procStatus(t, pid, "VmRSS")

	bodies := deepBodies(t)
	const callers, rounds = 64, 4
	tr := &http.Transport{MaxIdleConnsPerHost: callers}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	errs := make(chan error, callers*rounds*len(bodies))
	for range callers {
		wg.Go(func() {
			for range rounds {
				for _, b := range bodies {
					if err := expectCode(ctx, client, base, b.contentType, b.body, "key-office-b", b.want); err != nil {
						errs <- err
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	peak := procStatus(t, pid, "VmHWM")
	t.Logf("gateway RSS before: %d MiB, peak: %d MiB (%d callers x %d rounds x %d bodies)", start>>20, peak>>20, callers, rounds, len(bodies))
	if grown := peak - start; grown > 128<<20 {
		t.Fatalf("the gateway's resident set peaked %d MiB above its start: want at most 128 MiB", grown>>20)
	}

	// The office's own key gets the decoder's answer: the bounded depth
	// refuses the same bodies as malformed, at no such cost.
	if err := expectCode(ctx, client, base, "application/json", bodies["json"].body, "key-office-a", "invalid_argument"); err != nil {
		t.Error(err)
	}
}

// expectCode POSTs body as a Connect unary CallTool with key and checks the
// Connect error code of the answer.
func expectCode(ctx context.Context, client *http.Client, base, contentType string, body []byte, key, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+smcpv1connect.AgentServiceCallToolProcedure, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("x-api-key", key)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var got struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(text, &got); err != nil || got.Code != want {
		return fmt.Errorf("%s body (%d bytes), key %s: %s %q, want %s", contentType, len(body), key, resp.Status, text, want)
	}
	return nil
}
