package servers

import (
	"runtime"
	"slices"
	"strings"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// defaultInherited are the variables every stdio MCP server gets from the
// computer's environment: what the MCP TypeScript and Python SDKs pass by
// default (getDefaultEnvironment / DEFAULT_INHERITED_ENV_VARS), plus the
// locale, time zone and temporary directory, which a program needs to
// behave as it does at the user's shell and which carry no secret.
var defaultInherited = func() []string {
	if runtime.GOOS == "windows" {
		return []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
			"PROCESSOR_ARCHITECTURE", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "TZ"}
	}
	return []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LANGUAGE", "TZ", "TMPDIR"}
}()

// childEnv is the environment of a stdio MCP server: the default variables
// above and LC_* taken from environ, the names the configuration opts in to
// (inherit_env), then the configuration's own env values, which win. The
// computer's own variables (config.ComputerSecretEnv: the gateway API key,
// input values) are never passed on from environ, whatever the
// configuration says; a value the configuration writes out in env is the
// configuration's choice and is kept.
func childEnv(p *smcp.StdioParams, environ []string) []string {
	out := make([]string, 0, len(environ))
	seen := map[string]bool{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || config.ComputerSecretEnv(name) {
			continue
		}
		if _, own := p.Env[name]; own {
			continue
		}
		switch {
		case slices.Contains(p.InheritEnv, name):
		case slices.Contains(defaultInherited, name) || strings.HasPrefix(name, "LC_"):
			// Shell functions exported by bash look like "() { ...": the
			// SDKs leave them out as a security risk; so do we.
			if strings.HasPrefix(value, "()") {
				continue
			}
		default:
			continue
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, kv)
	}
	for _, k := range sortedEnvKeys(p.Env) {
		out = append(out, k+"="+p.Env[k])
	}
	return out
}

func sortedEnvKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
