package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/terminal"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

const computerUsage = `usage: smcp computer --config FILE --office ID [flags]

Inputs (${input:id}) come from $A2C_SMCP_<ID>, command inputs, a terminal prompt when
stdin is a terminal, or their default. Tool calls that are not auto_apply are confirmed
at the terminal when there is one, else decided by --confirm. SIGHUP reloads the
configuration file (servers added, changed, removed). HTTP servers behind OAuth use the
tokens of 'smcp computer auth login' (see 'smcp computer auth -h').`

// runComputer runs a computer: it hosts the MCP servers of a configuration
// file and serves them to the agents of one office through a gateway.
func runComputer(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "auth" {
		return runComputerAuth(ctx, args[1:], os.Stdout)
	}
	fs := newFlags("computer", computerUsage)
	cfgPath := fs.String("config", "", "MCP configuration: JSON or YAML, SDK shape ({servers, inputs}) or mcpServers shape (required)")
	gateways := urlList{urls: []string{"http://127.0.0.1:8080"}}
	fs.Var(&gateways, "gateway", "gateway base URL; for the nodes of a cluster repeat it or separate URLs with commas: "+
		"the computer joins through the first it reaches and fails over to the next when a connection drops")
	sioPath := fs.String("path", "/socket.io/", "Engine.IO path of the gateway")
	office := fs.String("office", "", "office to join (required)")
	hostname, _ := os.Hostname()
	name := fs.String("name", hostname, "computer name in the office")
	apiKeyArg, apiKeyFile := fs.addAPIKey("API key for the gateway")
	protocol := fs.String("protocol", computer.Protocol04,
		"protocol version to speak: 0.2, 0.3, 0.4 or the 0.5 draft (sent as a2c_version 0.2.0, 0.3.2, 0.4.0 or 0.5.0; it must be one the gateway serves)")
	confirm := fs.String("confirm", tools.ConfirmDeny,
		"tools that are not auto_apply, when no terminal can ask: auto (run them) or deny (refuse them)")
	var skillDirs pathList
	fs.Var(&skillDirs, "skills", "folder of skill folders (each with a SKILL.md), served to agents from 0.3; repeatable, "+
		"or several separated by '"+string(os.PathListSeparator)+"'")
	landingRoot := fs.String("landing-root", "", "folder where agents' uploads (client:put_blob, 0.4) land; unset refuses uploads")
	quotaBytes := fs.Int64("landing-quota-bytes", 0, "bytes the landing root may hold (landed files and uploads in progress at their declared size); an upload that would go over is refused before it starts (4019 too_large); 0: no bound")
	maxBlob := fs.Int64("max-blob-bytes", 100<<20, "largest blob the computer serves (a skill file, a tool result's binary items) or takes (an upload)")
	quotaFiles := fs.Int("landing-quota-files", 0, "files the landing root may hold (landed and in progress); 0: no bound")
	authField := fs.String("auth-field", sioclient.DefaultAuthField,
		"field of the Socket.IO auth object the API key is also sent in, from protocol 0.3 (beside the x-api-key header)")
	authStore := addAuthStoreFlags(fs)
	signInVia := fs.String("sign-in-via-gateway", "", "for a headless computer: the gateway's URL as operators' browsers reach it; "+
		"an MCP server that needs a sign-in gets one whose link an operator opens from the gateway's console (or ListSignIns), "+
		"its callback at the gateway's /oauth/callback/... (needs the token store's key)")
	fs.addLogFlags("info")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *cfgPath == "" || *office == "" {
		return usagef("--config and --office are required")
	}
	if _, ok := computer.A2CVersion(*protocol); !ok {
		return usagef("--protocol %q: want 0.2, 0.3 or 0.4", *protocol)
	}
	log, err := fs.logger()
	if err != nil {
		return err
	}
	apiKey, err := fs.apiKey(*apiKeyArg, *apiKeyFile, log)
	if err != nil {
		return err
	}

	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	// Without a key there is no store: a server's 401 is answered 4006.
	store, err := authStore.open(false)
	if err != nil {
		return err
	}
	opts := computer.Options{Name: *name, Config: cfg, Logger: log, Confirm: *confirm, AuthStore: store,
		Protocol: *protocol, SkillDirs: skillDirs, LandingRoot: *landingRoot, LandingQuotaBytes: *quotaBytes, LandingQuotaFiles: *quotaFiles,
		MaxBlobBytes: *maxBlob}
	if *signInVia != "" {
		if store == nil {
			return usagef("--sign-in-via-gateway needs the token store's key (--auth-store-key-file or $SMCP_AUTH_STORE_KEY)")
		}
		if u, err := url.Parse(*signInVia); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--sign-in-via-gateway %q: want the gateway's http(s) URL", *signInVia)
		}
		opts.SignInRedirect = computer.GatewaySignInRedirect(*signInVia, *office, *name)
	}
	if *maxBlob <= 0 {
		return usagef("--max-blob-bytes must be positive")
	}
	if *quotaBytes < 0 || *quotaFiles < 0 {
		return usagef("--landing-quota-bytes and --landing-quota-files must not be negative")
	}
	if terminal.Interactive() {
		t := terminal.Stdio()
		opts.InputAsker, opts.ConfirmAsker = t, t
	}
	c, err := computer.New(opts)
	if err != nil {
		return err
	}
	// SIGHUP reloads the configuration file and applies the differences.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				next, err := config.Load(*cfgPath)
				if err != nil {
					log.Error("reload: configuration not applied", "err", err)
					continue
				}
				if err := c.ApplyConfig(next); err != nil {
					log.Error("reload", "err", err)
				} else {
					log.Info("configuration reloaded", "servers", len(next.Servers))
				}
			}
		}
	}()
	log.Info("computer starting", "name", *name, "servers", len(cfg.Servers), "gateway", gateways.String(), "office", *office, "protocol", *protocol)
	err = c.Run(ctx, computer.Gateway{URL: gateways.urls[0], Fallbacks: gateways.urls[1:], Path: *sioPath, Office: *office, APIKey: apiKey,
		Dial: sioclient.Options{AuthField: *authField}})
	var ve *sioclient.VersionError
	if errors.As(err, &ve) {
		// One line that says what to do; retrying would only repeat it.
		return versionAdvice(gateways.String(), *protocol, ve)
	}
	return err
}

// versionAdvice explains a gateway's version refusal in one line: what it
// supports and the --protocol to use.
func versionAdvice(gateway, protocol string, ve *sioclient.VersionError) error {
	sent, _ := computer.A2CVersion(protocol)
	supported := ve.Protocols()
	var use string
	for _, p := range supported {
		if _, ok := computer.A2CVersion(p); ok && p > use {
			use = p
		}
	}
	switch {
	case ve.CloseCode != 0:
		return fmt.Errorf("gateway %s refused protocol %s (a2c_version %s; WebSocket close %d, supported versions not given): "+
			"try --protocol with another of 0.2, 0.3, 0.4, 0.5", gateway, protocol, sent, ve.CloseCode)
	case use != "":
		return fmt.Errorf("gateway %s refused protocol %s (a2c_version %s); it supports %s: run with --protocol %s",
			gateway, protocol, sent, strings.Join(supported, ", "), use)
	case len(supported) > 0:
		return fmt.Errorf("gateway %s refused protocol %s (a2c_version %s); it supports %s, which this computer does not speak (it speaks 0.2, 0.3, 0.4, 0.5)",
			gateway, protocol, sent, strings.Join(supported, ", "))
	default:
		return fmt.Errorf("gateway %s refused protocol %s (a2c_version %s) without saying which it supports: try --protocol with another of 0.2, 0.3, 0.4, 0.5",
			gateway, protocol, sent)
	}
}

// pathList is a repeatable flag of folders; one value may hold several
// separated by the OS's list separator (as $SMCP_SKILLS does).
type pathList []string

func (p *pathList) String() string { return strings.Join(*p, string(os.PathListSeparator)) }

func (p *pathList) Set(v string) error {
	for _, d := range filepath.SplitList(v) {
		if d = strings.TrimSpace(d); d != "" {
			*p = append(*p, d)
		}
	}
	return nil
}

// urlList is the repeatable --gateway flag: a value may hold several URLs
// separated by commas (as $SMCP_GATEWAY does); the first value given
// replaces the default.
type urlList struct {
	urls []string
	set  bool
}

func (u *urlList) String() string {
	if u == nil {
		return ""
	}
	return strings.Join(u.urls, ",")
}

func (u *urlList) Set(v string) error {
	if !u.set {
		u.urls, u.set = nil, true
	}
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := url.Parse(s)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("%q: want an http:// or https:// URL", s)
		}
		if !slices.Contains(u.urls, s) {
			u.urls = append(u.urls, s)
		}
	}
	if len(u.urls) == 0 {
		return errors.New("no URL given")
	}
	return nil
}
