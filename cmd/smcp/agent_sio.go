package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// The 0.3/0.4 subcommands (skills, skill, blob, put) speak Socket.IO as
// agent --name in --protocol's profile: the events they send exist in no
// older profile, and a version refusal is the gateway's to say at the
// handshake.

// sioSession dials the gateway and joins the office. A refused protocol
// version ends here, once: retrying cannot change the gateway's answer.
func (a *agentCLI) sioSession(ctx context.Context) (*agent.Client, error) {
	dctx, cancel := a.ctx(ctx)
	defer cancel()
	c, err := agent.Dial(dctx, sioclient.Options{URL: a.url, APIKey: a.apiKey, AuthField: a.authField, NoReconnect: true,
		Version: a.protocol.Full(), Logger: a.log}, a.name)
	if err != nil {
		var refused *sioclient.VersionError
		if errors.As(err, &refused) {
			return nil, versionRefused(a.protocol, a.needs, refused)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("connect to %s: no answer in time (--timeout): %w", a.url, err)
		}
		return nil, fmt.Errorf("connect to %s: %w", a.url, err)
	}
	if err := c.Join(dctx, a.office); err != nil {
		c.Close()
		return nil, fmt.Errorf("join office %q as %s: %w", a.office, a.name, err)
	}
	return c, nil
}

// versionRefused is the one line of a gateway refusing --protocol: the
// versions it speaks and, when one of them has what the subcommand needs,
// the flag to pass.
func versionRefused(asked, needs smcp.Version, e *sioclient.VersionError) error {
	supported := e.Protocols()
	if len(supported) == 0 {
		return fmt.Errorf("the gateway refused protocol %s (code %d) and did not say which it supports", asked, smcp.CodeVersionMismatch)
	}
	msg := fmt.Sprintf("the gateway refused protocol %s (code %d): it supports %s", asked, smcp.CodeVersionMismatch, strings.Join(supported, ", "))
	newest, err := smcp.ParseProfile(supported[len(supported)-1])
	switch {
	case err == nil && newest.Compare(needs) >= 0:
		msg += "; use --protocol " + newest.String()
	case err == nil:
		msg += fmt.Sprintf(", and this command needs %s or later", needs)
	}
	return errors.New(msg)
}

// sioTarget is --computer, else the office's only computer.
func (a *agentCLI) sioTarget(ctx context.Context, c *agent.Client) (string, error) {
	if a.computer != "" {
		return a.computer, nil
	}
	rctx, cancel := a.ctx(ctx)
	defer cancel()
	sessions, err := c.ListRoom(rctx)
	if err != nil {
		return "", fmt.Errorf("list_room: %w", err)
	}
	var names []string
	for _, s := range sessions {
		if s.GetRole() == smcp.RoleComputer {
			names = append(names, s.GetName())
		}
	}
	slices.Sort(names)
	return a.onlyComputer(names)
}

// withComputer runs fn with a joined session and its target computer.
func (a *agentCLI) withComputer(ctx context.Context, fn func(*agent.Client, string) error) error {
	c, err := a.sioSession(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	computer, err := a.sioTarget(ctx, c)
	if err != nil {
		return err
	}
	return fn(c, computer)
}

func (a *agentCLI) skills(ctx context.Context) error {
	return a.withComputer(ctx, func(c *agent.Client, computer string) error {
		rctx, cancel := a.ctx(ctx)
		defer cancel()
		res, err := c.GetSkills(rctx, computer)
		if err != nil {
			return rpcError("get_skills", err)
		}
		if a.asJSON {
			return a.printJSON(res)
		}
		fmt.Fprintf(a.out, "%s (%d skills)\n", computer, len(res.GetSkills()))
		tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
		for _, s := range res.GetSkills() {
			desc, _, _ := strings.Cut(strings.TrimSpace(s.GetDescription()), "\n")
			if r := []rune(desc); len(r) > 100 {
				desc = string(r[:99]) + "…"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.GetName(), s.GetSource(), desc)
		}
		return tw.Flush()
	})
}

// skill prints a skill's file (to --output when set): the inline body, or
// the blob its handle names, drained chunk by chunk.
func (a *agentCLI) skill(ctx context.Context, name, rel, output string) error {
	return a.withComputer(ctx, func(c *agent.Client, computer string) error {
		rctx, cancel := a.ctx(ctx)
		res, err := c.GetSkill(rctx, computer, name, rel)
		cancel()
		if err != nil {
			return rpcError("get_skill "+name, err)
		}
		if a.asJSON {
			return a.printJSON(res)
		}
		if res.Body != nil {
			if output == "" {
				_, err := io.WriteString(a.out, res.GetBody())
				return err
			}
			return writeFileAtomic(output, func(w io.Writer) error {
				_, err := io.WriteString(w, res.GetBody())
				return err
			})
		}
		if res.GetBlobHandle() == "" {
			return fmt.Errorf("get_skill %s: the answer has neither body nor blob_handle", name)
		}
		return a.drain(ctx, c, computer, res.GetBlobHandle(), output)
	})
}

// blob drains a blob handle into output.
func (a *agentCLI) blob(ctx context.Context, handle, output string) error {
	return a.withComputer(ctx, func(c *agent.Client, computer string) error {
		return a.drain(ctx, c, computer, handle, output)
	})
}

// drain reads a blob into output ("" or "-": standard output). The whole
// transfer has --timeout per chunk on average, at least --timeout.
func (a *agentCLI) drain(ctx context.Context, c *agent.Client, computer, handle, output string) error {
	// One deadline for the whole transfer, renewed per chunk, would need
	// the agent package to expose chunks; a generous overall bound keeps
	// a stuck computer from hanging the command.
	ctx, cancel := context.WithTimeout(ctx, a.timeout*blobTimeoutFactor)
	defer cancel()
	var info *agent.BlobInfo
	read := func(w io.Writer) error {
		var err error
		info, err = c.ReadBlob(ctx, computer, handle, w)
		return err
	}
	if output == "" || output == "-" {
		if err := read(a.out); err != nil {
			return fmt.Errorf("get_blob: %w", err)
		}
		return nil
	}
	if err := writeFileAtomic(output, read); err != nil {
		return fmt.Errorf("get_blob into %s: %w", output, err)
	}
	if a.asJSON {
		_, err := fmt.Fprintf(a.out, "{\"path\":%q,\"total_size\":%d,\"sha256\":%q,\"mime_type\":%q}\n", output, info.Size, info.SHA256, info.MIMEType)
		return err
	}
	_, err := fmt.Fprintf(a.out, "%s: %d bytes, sha256 %s (checked), %s\n", output, info.Size, info.SHA256, info.MIMEType)
	return err
}

// blobTimeoutFactor bounds a whole blob transfer as a multiple of
// --timeout: a 100 MiB blob is 400 chunks.
const blobTimeoutFactor = 20

// writeFileAtomic writes path through fill into a temporary file beside it,
// renamed over path only once fill succeeds: a failed or corrupt transfer
// leaves no file (and an older file of that name untouched).
func writeFileAtomic(path string, fill func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".partial-*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	return nil
}

// put uploads a file with client:put_blob (0.4): hashed first, then sent
// in chunks; prints the path where the computer landed it.
func (a *agentCLI) put(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("put %s: not a regular file", path)
	}
	if st.Size() == 0 {
		return fmt.Errorf("put %s: the file is empty (the protocol uploads 1 byte or more)", path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("put %s: hash: %w", path, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("put %s: %w", path, err)
	}
	return a.withComputer(ctx, func(c *agent.Client, computer string) error {
		ctx, cancel := context.WithTimeout(ctx, a.timeout*blobTimeoutFactor)
		defer cancel()
		ret, err := c.PutBlob(ctx, computer, f, st.Size(), sum, filepath.Base(path))
		if err != nil {
			return fmt.Errorf("put %s: %w", path, err)
		}
		if a.asJSON {
			return a.printJSON(ret)
		}
		_, err = fmt.Fprintf(a.out, "%s\n", ret.GetLandingPath())
		return err
	})
}
