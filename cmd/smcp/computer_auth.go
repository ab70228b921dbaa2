package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/upstreamauth"
)

const computerAuthUsage = `usage: smcp computer auth list [flags]
       smcp computer auth login SERVER --config FILE [flags]
       smcp computer auth logout SERVER [flags]

Signs this computer in to MCP servers that need OAuth (streamable HTTP and SSE servers
that answer 401 with a Bearer challenge). login opens the authorization URL in the
browser (or prints it) and takes the callback on a loopback port of its own; the token
is kept in the token store, encrypted with the key of --auth-store-key-file or
$SMCP_AUTH_STORE_KEY, and used (and refreshed) by 'smcp computer' with the same store.
list shows server, issuer, scopes and expiry, never a token. logout forgets a server's
token and revokes it at the authorization server when it has a revocation endpoint.`

// authStoreFlags are the token store's flags, shared by `smcp computer`
// and `smcp computer auth`. The key itself has no flag (a command line is
// visible to every user of the machine): a file, or $SMCP_AUTH_STORE_KEY.
type authStoreFlags struct {
	path, keyFile *string
}

func addAuthStoreFlags(f *flags) authStoreFlags {
	return authStoreFlags{
		path: f.String("auth-store", "", "file of the OAuth token store (default $XDG_STATE_HOME/smcp/"+upstreamauth.DefaultFile+
			", else ~/.local/state/smcp/"+upstreamauth.DefaultFile+")"),
		keyFile: f.String("auth-store-key-file", "", "file holding the token store's key (at least 32 bytes; or $"+upstreamauth.KeyEnv+")"),
	}
}

// open opens the store; with required false, no key means no store (nil).
func (a authStoreFlags) open(required bool) (*upstreamauth.Store, error) {
	return upstreamauth.Open(*a.path, *a.keyFile, required)
}

// runComputerAuth is `smcp computer auth`.
func runComputerAuth(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usagef("smcp computer auth: want list, login SERVER or logout SERVER")
	}
	verb := args[0]
	fs := newFlags("computer auth "+verb, computerAuthUsage)
	store := addAuthStoreFlags(fs)
	cfgPath := fs.String("config", "", "MCP configuration of this computer (login: where SERVER is)")
	browser := fs.String("browser", "auto", "login: auto (open the URL with the system's opener, and print it) or none (print it only)")
	timeout := fs.Duration("timeout", 5*time.Minute, "login: how long to wait for the sign-in")
	cimd := fs.String("client-id-url", "", "login: this computer's OAuth client ID metadata document (an https URL), used when the authorization server supports it")
	fs.addLogFlags("warn")
	rest, err := fs.parseWithArgs(args[1:])
	if err != nil {
		return err
	}
	log, err := fs.logger()
	if err != nil {
		return err
	}
	st, err := store.open(true)
	if err != nil {
		return err
	}
	switch verb {
	case "list":
		if len(rest) != 0 {
			return usagef("list takes no argument")
		}
		return authList(st, stdout)
	case "login":
		if len(rest) != 1 || *cfgPath == "" {
			return usagef("login takes one SERVER (its name in the configuration) and --config")
		}
		if *browser != "auto" && *browser != "none" {
			return usagef("--browser %q: want auto or none", *browser)
		}
		srv, err := authServer(ctx, *cfgPath, rest[0])
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		e, err := upstreamauth.Login(ctx, srv, upstreamauth.LoginOptions{
			Store: st, Log: log, ClientIDMetadataURL: *cimd,
			OpenURL: func(ctx context.Context, u string) error {
				fmt.Fprintf(stdout, "Sign in to %q in your browser:\n  %s\n", srv.Name, u)
				if *browser == "auto" {
					if err := openBrowser(u); err != nil {
						fmt.Fprintf(stdout, "(could not open a browser: %v; open the URL above)\n", err)
					}
				}
				return nil
			},
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Signed in to %q (issuer %s, scopes %s, token until %s).\n", srv.Name, e.Issuer,
			strings.Join(e.Scopes, " "), e.Token.Expiry.Local().Format(time.RFC3339))
		return nil
	case "logout":
		if len(rest) != 1 {
			return usagef("logout takes one SERVER")
		}
		gone, err := st.Delete(rest[0])
		if err != nil {
			return err
		}
		if len(gone) == 0 {
			return fmt.Errorf("no token stored for %q (see 'smcp computer auth list')", rest[0])
		}
		var errs []error
		for _, e := range gone {
			if err := upstreamauth.Revoke(ctx, nil, e); err != nil {
				errs = append(errs, err)
			}
			fmt.Fprintf(stdout, "Signed out of %q (%s)%s.\n", e.Name, e.Resource, map[bool]string{true: ", token revoked at the authorization server"}[e.RevocationURL != ""])
		}
		if len(errs) > 0 {
			return fmt.Errorf("the token is forgotten here, but revoking it failed: %w", errors.Join(errs...))
		}
		return nil
	}
	return usagef("smcp computer auth %s: want list, login or logout", verb)
}

func authList(st *upstreamauth.Store, w io.Writer) error {
	list, err := st.List()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tBUNDLE\tRESOURCE\tISSUER\tCLIENT\tSCOPES\tEXPIRES\tREFRESH")
	slices.SortFunc(list, func(a, b *upstreamauth.Entry) int { return strings.Compare(a.Name, b.Name) })
	for _, e := range list {
		exp, refresh := "-", "no"
		if e.Token != nil {
			if !e.Token.Expiry.IsZero() {
				exp = e.Token.Expiry.Local().Format(time.RFC3339)
			}
			if e.Token.RefreshToken != "" {
				refresh = "yes"
			}
		}
		scopes := strings.Join(e.Scopes, " ")
		if len(e.StepUp) > 0 {
			scopes += " (+ asked: " + strings.Join(e.StepUp, " ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, e.Server, e.Resource, e.Issuer, e.Client.How, scopes, exp, refresh)
	}
	return tw.Flush()
}

// authServer finds SERVER (by name or bundle id) in the configuration and
// renders it (its URL and headers may hold ${input:...}).
func authServer(ctx context.Context, path, name string) (upstreamauth.Server, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return upstreamauth.Server{}, err
	}
	s := cfg.Servers[name]
	if s == nil {
		for _, c := range cfg.Servers {
			if id, _ := c.BundleID(); id == name {
				s = c
			}
		}
	}
	if s == nil {
		return upstreamauth.Server{}, fmt.Errorf("no server %q in %s", name, path)
	}
	id, err := s.BundleID()
	if err != nil {
		return upstreamauth.Server{}, err
	}
	res, _, err := s.Resolve(ctx, config.NewResolver(cfg.Inputs, os.LookupEnv, nil))
	if err != nil {
		return upstreamauth.Server{}, err
	}
	out := upstreamauth.Server{ID: id, Name: s.Name}
	switch p := res.Params; {
	case p.Streamable != nil:
		out.URL, out.Headers = p.Streamable.URL, p.Streamable.Headers
	case p.SSE != nil:
		out.URL, out.Headers, out.SSE = p.SSE.URL, p.SSE.Headers, true
	default:
		return upstreamauth.Server{}, fmt.Errorf("server %q is a stdio server: only HTTP servers sign in with OAuth", s.Name)
	}
	return out, nil
}

// openBrowser opens u with the system's opener, without waiting for it.
func openBrowser(u string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		cmd = exec.Command("xdg-open", u)
	}
	// The opener's environment is the user's own minus the computer's
	// secrets (the store key among them).
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return config.ComputerSecretEnv(name)
	})
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
