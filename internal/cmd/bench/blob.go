package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/loadtest"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

// The blob mode's paths, in the order they run: downloads then uploads,
// each through the gateway and (--compare http) through net/http.
const (
	pathSIOGet     = "sio-get"     // client:get_blob through the Go agent (agent.Client.ReadBlob)
	pathConnRead   = "connect-get" // Connect ReadBlob
	pathMCPRead    = "mcp-get"     // MCP resources/read of the skill file
	pathHTTPGet    = "http-get"    // net/http serving the file
	pathSIOPut     = "sio-put"     // client:put_blob through the Go agent (agent.Client.PutBlob)
	pathConnPut    = "connect-put" // Connect PutBlob
	pathHTTPPut    = "http-put"    // net/http receiving the file
	blobOffice     = "blob"
	blobSkill      = "bench"
	blobFile       = "data.bin"
	blobComputer   = "pc"
	blobAgent      = "bench-agent"
	blobPutChunk   = 256 << 10 // bytes per PutBlob message (Connect)
	rssSampleEvery = 20 * time.Millisecond
)

var blobPaths = []string{pathSIOGet, pathConnRead, pathMCPRead, pathHTTPGet, pathSIOPut, pathConnPut, pathHTTPPut}

// blobRow is one file moved through one path.
type blobRow struct {
	Path    string
	Bytes   int64
	Elapsed time.Duration
	MiBps   float64
	SHA256  bool // the bytes that arrived hash to the file's sha256
	// Peak VmRSS growth over the transfer (bytes) and CPU spent, of the
	// spawned gateway and computer, and of this process (the agent side).
	GatewayRSS, ComputerRSS           int64
	GatewayCPU, ComputerCPU, AgentCPU time.Duration
	// GatewaySyscalls counts the gateway's read and write system calls
	// over the transfer (/proc/<pid>/io).
	GatewaySyscalls int64
	Err             string `json:",omitempty"`
}

// blobBench is one invocation of the blob mode.
type blobBench struct {
	size       int64
	paths      map[string]bool
	http       bool
	profileDir string

	dir, file, landing string
	sum                string
	gw, pc             *loadtest.Child
	rows               []blobRow
}

// runBlob moves a random file of size bytes through each path and prints
// one row per path.
func runBlob(ctx context.Context, out io.Writer, size int64, paths string, compareHTTP bool, profileDir string, jsonOut bool) error {
	b := &blobBench{size: size, http: compareHTTP, profileDir: profileDir, paths: map[string]bool{}}
	for p := range strings.SplitSeq(paths, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		found := false
		for _, q := range blobPaths {
			found = found || q == p
		}
		if !found || strings.HasPrefix(p, "http-") {
			return fmt.Errorf("--blob-paths: %q is none of %s (the http rows come with --compare http)", p, strings.Join(blobPaths, ", "))
		}
		b.paths[p] = true
	}
	if len(b.paths) == 0 {
		for _, p := range blobPaths {
			b.paths[p] = !strings.HasPrefix(p, "http-")
		}
	}
	b.paths[pathHTTPGet], b.paths[pathHTTPPut] = compareHTTP, compareHTTP
	started, load := time.Now().UTC(), loadtest.LoadAvg()
	err := b.run(ctx)
	if jsonOut {
		return errors.Join(err, writeJSON(out, b.rows))
	}
	fmt.Fprintf(out, "bench blob  %s  file %d MiB  load avg %s -> %s\n\n", started.Format(time.RFC3339), size>>20, load, loadtest.LoadAvg())
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\tMiB/s\tseconds\tsha256\tgateway RSS +MiB\tcomputer RSS +MiB\tgateway CPU s\tcomputer CPU s\tagent CPU s\tgateway syscalls/MiB\t")
	var httpGet, httpPut float64
	for _, r := range b.rows {
		switch r.Path {
		case pathHTTPGet:
			httpGet = r.MiBps
		case pathHTTPPut:
			httpPut = r.MiBps
		}
	}
	for _, r := range b.rows {
		ok := "ok"
		if !r.SHA256 {
			ok = "WRONG"
		}
		if r.Err != "" {
			ok = "error"
		}
		ratio := ""
		if ref := map[bool]float64{true: httpPut, false: httpGet}[strings.HasSuffix(r.Path, "-put")]; ref > 0 && !strings.HasPrefix(r.Path, "http-") {
			ratio = fmt.Sprintf(" (%.2fx http)", r.MiBps/ref)
		}
		fmt.Fprintf(tw, "%s\t%.1f%s\t%.2f\t%s\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t%.0f\t\n", r.Path, r.MiBps, ratio, r.Elapsed.Seconds(), ok,
			float64(r.GatewayRSS)/(1<<20), float64(r.ComputerRSS)/(1<<20), r.GatewayCPU.Seconds(), r.ComputerCPU.Seconds(), r.AgentCPU.Seconds(),
			float64(r.GatewaySyscalls)/float64(r.Bytes>>20))
	}
	_ = tw.Flush()
	for _, r := range b.rows {
		if r.Err != "" {
			fmt.Fprintf(out, "%s: %s\n", r.Path, r.Err)
		}
	}
	return err
}

func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (b *blobBench) run(ctx context.Context) error {
	var err error
	if b.dir, err = os.MkdirTemp("", "bench-blob-"); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(b.dir) }()
	skill := filepath.Join(b.dir, "skills", blobSkill)
	b.landing = filepath.Join(b.dir, "landing")
	for _, d := range []string{skill, b.landing} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: "+blobSkill+"\ndescription: The blob bench's file.\n---\n"), 0o644); err != nil {
		return err
	}
	b.file = filepath.Join(skill, blobFile)
	if b.sum, err = writeRandom(b.file, b.size); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	gwArgs := []string{"serve", "-kind", loadtest.KindGateway, "-mcp-max-blob-bytes", strconv.FormatInt(b.size, 10)}
	pcArgs := []string{"computer", "-skills", filepath.Dir(skill), "-landing", b.landing, "-max-blob-bytes", strconv.FormatInt(b.size, 10)}
	if b.profileDir != "" {
		gwArgs = append(gwArgs, "-cpuprofile", filepath.Join(b.profileDir, "blob-gateway.pprof"))
		pcArgs = append(pcArgs, "-cpuprofile", filepath.Join(b.profileDir, "blob-computer.pprof"))
		f, err := os.Create(filepath.Join(b.profileDir, "blob-agent.pprof"))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if b.gw, err = spawnAnnouncing(ctx, loadtest.KindGateway, exec.Command(exe, gwArgs...)); err != nil {
		return err
	}
	defer b.gw.Stop()
	pcArgs = append(pcArgs, "-url", b.gw.URL)
	if b.pc, err = spawnAnnouncing(ctx, "computer", exec.Command(exe, pcArgs...)); err != nil {
		return err
	}
	defer b.pc.Stop()

	ag, err := agent.Dial(ctx, sioclient.Options{URL: b.gw.URL, Version: "0.4.0", Logger: slog.New(slog.DiscardHandler)}, blobAgent)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	defer ag.Close()
	if err := ag.Join(ctx, blobOffice); err != nil {
		return fmt.Errorf("agent join: %w", err)
	}
	handle, err := b.handle(ctx, ag)
	if err != nil {
		return err
	}
	var srv *httpFile
	if b.http {
		if srv, err = serveFile(b.file, b.landing); err != nil {
			return err
		}
		defer srv.close()
	}
	cc := smcpv1connect.NewAgentServiceClient(http.DefaultClient, b.gw.URL, connect.WithInterceptors(agentHeader{}))

	steps := []struct {
		path string
		up   bool
		fn   func(context.Context) (string, error) // the sha256 of what arrived
	}{
		{pathSIOGet, false, func(ctx context.Context) (string, error) {
			h := sha256.New()
			if _, err := ag.ReadBlob(ctx, blobComputer, handle, h); err != nil {
				return "", err
			}
			return hex.EncodeToString(h.Sum(nil)), nil
		}},
		{pathConnRead, false, func(ctx context.Context) (string, error) {
			return connectRead(ctx, cc, handle)
		}},
		{pathMCPRead, false, func(ctx context.Context) (string, error) {
			return b.mcpRead(ctx)
		}},
		{pathHTTPGet, false, func(ctx context.Context) (string, error) { return srv.get(ctx) }},
		{pathSIOPut, true, func(ctx context.Context) (string, error) {
			f, err := os.Open(b.file)
			if err != nil {
				return "", err
			}
			defer f.Close()
			ret, err := ag.PutBlob(ctx, blobComputer, f, b.size, b.sum, "up.bin")
			if err != nil {
				return "", err
			}
			return b.landed(ret.GetLandingPath())
		}},
		{pathConnPut, true, func(ctx context.Context) (string, error) {
			path, err := connectPut(ctx, cc, b.file, b.size, b.sum)
			if err != nil {
				return "", err
			}
			return b.landed(path)
		}},
		{pathHTTPPut, true, func(ctx context.Context) (string, error) { return srv.put(ctx) }},
	}
	var errs []error
	for _, s := range steps {
		if !b.paths[s.path] {
			continue
		}
		row, err := b.measure(ctx, s.path, s.fn)
		b.rows = append(b.rows, row)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.path, err))
		}
	}
	return errors.Join(errs...)
}

// handle asks the computer for the skill file's blob handle, waiting for
// the computer's join to reach the office.
func (b *blobBench) handle(ctx context.Context, ag *agent.Client) (string, error) {
	deadline := time.Now().Add(spawnWait)
	for {
		ret, err := ag.GetSkill(ctx, blobComputer, blobSkill, blobFile)
		if err == nil {
			if ret.GetBlobHandle() == "" || ret.GetSha256() != b.sum {
				return "", fmt.Errorf("get_skill: no blob handle, or sha256 %s (the file's is %s)", ret.GetSha256(), b.sum)
			}
			return ret.GetBlobHandle(), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("get_skill: %w", err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// landed hashes a file landed by an upload, and removes it.
func (b *blobBench) landed(path string) (string, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(b.landing, path)
	}
	defer func() { _ = os.Remove(path) }()
	return hashFile(path)
}

// measure runs fn, sampling the children's RSS, and checks its sha256.
func (b *blobBench) measure(ctx context.Context, path string, fn func(context.Context) (string, error)) (blobRow, error) {
	row := blobRow{Path: path, Bytes: b.size}
	pids := []int{b.gw.PID, b.pc.PID}
	before := make([]loadtest.ProcSample, len(pids))
	for i, pid := range pids {
		before[i], _ = loadtest.ReadProc(strconv.Itoa(pid))
	}
	self, _ := loadtest.ReadProc("self")
	peak := make([]int64, len(pids))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(rssSampleEvery)
		defer t.Stop()
		for {
			for i, pid := range pids {
				if s, err := loadtest.ReadProc(strconv.Itoa(pid)); err == nil {
					peak[i] = max(peak[i], s.RSS)
				}
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	start := time.Now()
	sum, err := fn(ctx)
	row.Elapsed = time.Since(start)
	close(stop)
	wg.Wait()
	after := make([]loadtest.ProcSample, len(pids))
	for i, pid := range pids {
		after[i], _ = loadtest.ReadProc(strconv.Itoa(pid))
	}
	selfAfter, _ := loadtest.ReadProc("self")
	row.MiBps = float64(b.size) / (1 << 20) / row.Elapsed.Seconds()
	row.SHA256 = err == nil && sum == b.sum
	row.GatewayRSS, row.ComputerRSS = max(0, peak[0]-before[0].RSS), max(0, peak[1]-before[1].RSS)
	row.GatewayCPU, row.ComputerCPU = after[0].CPU-before[0].CPU, after[1].CPU-before[1].CPU
	row.AgentCPU = selfAfter.CPU - self.CPU
	row.GatewaySyscalls = after[0].IO - before[0].IO
	if err == nil && !row.SHA256 {
		err = fmt.Errorf("the bytes that arrived hash to %s, the file's sha256 is %s", sum, b.sum)
	}
	if err != nil {
		row.Err = err.Error()
	}
	return row, err
}

// agentHeader names the Connect caller's agent.
type agentHeader struct{}

func (agentHeader) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc { return next }
func (agentHeader) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, s connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, s)
		conn.RequestHeader().Set("X-Smcp-Agent", blobAgent)
		return conn
	}
}
func (agentHeader) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func connectRead(ctx context.Context, cc smcpv1connect.AgentServiceClient, handle string) (string, error) {
	stream, err := cc.ReadBlob(ctx, &smcpv1.ReadBlobRequest{OfficeId: blobOffice, Computer: blobComputer, BlobHandle: handle})
	if err != nil {
		return "", err
	}
	defer stream.Close()
	h := sha256.New()
	eof := false
	for stream.Receive() {
		h.Write(stream.Msg().GetData())
		eof = stream.Msg().GetEof()
	}
	if err := stream.Err(); err != nil {
		return "", err
	}
	if !eof {
		return "", errors.New("the stream ended without eof")
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func connectPut(ctx context.Context, cc smcpv1connect.AgentServiceClient, file string, size int64, sum string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	stream, err := cc.PutBlob(ctx)
	if err != nil {
		return "", err
	}
	send := func() error {
		if err := stream.Send(&smcpv1.PutBlobRequest{Part: &smcpv1.PutBlobRequest_Header{Header: &smcpv1.PutBlobHeader{
			OfficeId: blobOffice, Computer: blobComputer, TotalSize: size, Sha256: sum, NameHint: proto.String("up.bin")}}}); err != nil {
			return err
		}
		buf := make([]byte, blobPutChunk)
		for {
			n, err := io.ReadFull(f, buf)
			if n > 0 {
				if err := stream.Send(&smcpv1.PutBlobRequest{Part: &smcpv1.PutBlobRequest_Data{Data: buf[:n]}}); err != nil {
					return err
				}
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	serr := send()
	res, err := stream.CloseAndReceive()
	if err != nil {
		return "", err // the server's answer says more than a broken send
	}
	if serr != nil {
		return "", serr
	}
	return res.GetLandingPath(), nil
}

// mcpRead reads the skill file with MCP resources/read on a session of its
// own (the office's agent seat is free between the paths).
func (b *blobBench) mcpRead(ctx context.Context) (string, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "smcp-bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:             b.gw.URL + "/mcp/" + blobOffice,
		HTTPClient:           &http.Client{Transport: headerRT{agent: blobAgent}},
		DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		return "", fmt.Errorf("MCP session: %w", err)
	}
	defer func() { _ = cs.Close() }()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://" + blobComputer + "/" + blobSkill + "/" + blobFile})
	if err != nil {
		return "", err
	}
	if len(res.Contents) != 1 {
		return "", fmt.Errorf("%d contents, want 1", len(res.Contents))
	}
	h := sha256.Sum256(res.Contents[0].Blob)
	return hex.EncodeToString(h[:]), nil
}

type headerRT struct{ agent string }

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Smcp-Agent", h.agent)
	return http.DefaultTransport.RoundTrip(r)
}

// httpFile is net/http serving the file (GET) and receiving uploads into
// the landing folder (POST), the bench's reference.
type httpFile struct {
	srv  *http.Server
	url  string
	file string
	done chan struct{}
}

func serveFile(file, landing string) (*httpFile, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /file", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, file) })
	mux.HandleFunc("POST /file", func(w http.ResponseWriter, r *http.Request) {
		f, err := os.CreateTemp(landing, "http-*.part")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer func() { _ = os.Remove(f.Name()) }()
		defer f.Close()
		// As the computer lands an upload: written to a file, hashed.
		h := sha256.New()
		if _, err := io.Copy(io.MultiWriter(f, h), r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, hex.EncodeToString(h.Sum(nil)))
	})
	s := &httpFile{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, url: "http://" + ln.Addr().String() + "/file",
		file: file, done: make(chan struct{})}
	go func() { defer close(s.done); _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *httpFile) close() { _ = s.srv.Close(); <-s.done }

func (s *httpFile) get(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return "", err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, res.Body); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (s *httpFile) put(ctx context.Context) (string, error) {
	f, err := os.Open(s.file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, f)
	if err != nil {
		return "", err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("POST: %s %s %v", res.Status, body, err)
	}
	return string(body), nil
}

// writeRandom writes size random bytes to path and returns their sha256.
func writeRandom(path string, size int64) (string, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.Reader, size); err != nil {
		_ = f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// benchComputer is the hidden child of the blob mode: a 0.4 computer
// serving a skills folder and a landing root in the blob office of the
// gateway at -url, announced with "LISTEN <gateway url>" once joined.
func benchComputer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench computer", flag.ContinueOnError)
	url := fs.String("url", "", "gateway URL")
	skills := fs.String("skills", "", "skills folder")
	landing := fs.String("landing", "", "landing root")
	maxBlob := fs.Int64("max-blob-bytes", 0, "the computer's blob cap (0: its default)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stop, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := computer.New(computer.Options{Name: blobComputer, Confirm: tools.ConfirmAuto, Config: &config.Config{Servers: map[string]*config.Server{}},
		Protocol: computer.Protocol04, SkillDirs: []string{*skills}, LandingRoot: *landing, MaxBlobBytes: *maxBlob, Logger: log})
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Start(); err != nil {
		return err
	}
	link, err := c.Connect(ctx, computer.Gateway{URL: *url, Office: blobOffice, Dial: sioclient.Options{Logger: log}})
	if err != nil {
		return err
	}
	defer link.Close()
	fmt.Printf("LISTEN %s\n", *url)
	<-ctx.Done()
	return nil
}

// startCPUProfile profiles the process into path until the returned
// function is called; path "" does nothing.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}
