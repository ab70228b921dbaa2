package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// Exit statuses, the same for every subcommand.
const (
	exitOK      = 0 // done, or help asked for
	exitFailure = 1 // the command ran and failed (a refused key, a port in use, ...)
	exitUsage   = 2 // the command line is wrong: unknown flag, bad value, missing argument
)

// envPrefix prefixes the environment variable of every flag: --call-timeout
// is also $SMCP_CALL_TIMEOUT.
const envPrefix = "SMCP_"

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// helpShown is returned when -h/--help was given: the usage text goes to
// stdout and the exit status is 0, as for `smcp help`.
type helpShown struct{ text string }

func (h *helpShown) Error() string { return "help requested" }

// flags is a subcommand's flag set with the conventions every subcommand
// shares: -h prints the usage on stdout, an unknown flag is one error line,
// every flag falls back to $SMCP_<FLAG>, and --log-level/--log-json exist.
type flags struct {
	*flag.FlagSet
	cmd      string
	header   string
	fromEnv  map[string]string // flag name -> the variable it was read from
	logLevel *string
	logJSON  *bool
}

// newFlags makes the flag set of `smcp cmd`; header is the usage text shown
// above the flags.
func newFlags(cmd, header string) *flags {
	f := &flags{FlagSet: flag.NewFlagSet("smcp "+cmd, flag.ContinueOnError), cmd: cmd, header: header, fromEnv: map[string]string{}}
	// The flag package prints the error and the whole usage on every parse
	// error; parse reports errors itself, once.
	f.SetOutput(io.Discard)
	f.Usage = func() {}
	return f
}

// addLogFlags registers --log-level and --log-json for commands whose
// configuration does not hold them already.
func (f *flags) addLogFlags(defaultLevel string) {
	f.logLevel = f.String("log-level", defaultLevel, "debug, info, warn or error (logs go to stderr)")
	f.logJSON = f.Bool("log-json", false, "log as JSON lines")
}

// envName is the environment variable of a flag.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// usage renders the usage text.
func (f *flags) usage() string {
	var b bytes.Buffer
	if f.header != "" {
		b.WriteString(strings.TrimRight(f.header, "\n"))
		b.WriteString("\n\n")
	}
	b.WriteString("flags (each also read from $" + envPrefix + "<FLAG>, e.g. --log-level from $" + envName("log-level") + "; the command line wins):\n")
	f.SetOutput(&b)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
	return b.String()
}

// parse parses args, then fills every flag not given on the command line
// from its environment variable. It returns *helpShown for -h, and a usage
// error for an unknown flag, a bad value or a stray argument.
func (f *flags) parse(args []string) error {
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &helpShown{f.usage()}
		}
		return &usageError{err}
	}
	if f.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(f.Args(), " "))
	}
	return f.applyEnv()
}

// parseWithArgs is parse for commands that take arguments: flags and
// arguments may come in any order (`smcp agent call echo --computer pc`),
// and the arguments are returned. "--" ends the flags.
func (f *flags) parseWithArgs(args []string) ([]string, error) {
	var positional []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpShown{f.usage()}
			}
			return nil, &usageError{err}
		}
		rest := f.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	return positional, f.applyEnv()
}

// applyEnv sets the flags absent from the command line from $SMCP_<FLAG>.
func (f *flags) applyEnv() error {
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var err error
	f.VisitAll(func(fl *flag.Flag) {
		if given[fl.Name] || err != nil {
			return
		}
		name := envName(fl.Name)
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return
		}
		if serr := f.Set(fl.Name, v); serr != nil {
			// Only string flags hold secrets, and setting a string never fails.
			err = usagef("$%s: invalid value for --%s: %v", name, fl.Name, serr)
			return
		}
		f.fromEnv[fl.Name] = name
	})
	return err
}

// logger builds the logger of --log-level and --log-json.
func (f *flags) logger() (*slog.Logger, error) {
	return newLogger(*f.logLevel, *f.logJSON)
}

// newLogger builds the stderr logger every subcommand uses.
func newLogger(level string, asJSON bool) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	if asJSON {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
}

// apiKeyFileFlag and apiKeyFlag name the two ways to give a command its key
// besides $SMCP_API_KEY.
const (
	apiKeyFlag     = "api-key"
	apiKeyFileFlag = "api-key-file"
)

// addAPIKey registers --api-key and --api-key-file (each also read from the
// environment, as every flag); apiKey resolves them once parsed.
func (f *flags) addAPIKey(usage string) (key, file *string) {
	key = f.String(apiKeyFlag, "", usage+" (better from $SMCP_API_KEY or --api-key-file: a command line is visible to every user of the machine)")
	file = f.String(apiKeyFileFlag, "", "file holding the API key (its first line)")
	return key, file
}

// onCommandLine reports whether flag name was given on the command line,
// rather than taken from the environment.
func (f *flags) onCommandLine(name string) bool {
	given := false
	f.Visit(func(fl *flag.Flag) { given = given || fl.Name == name })
	return given && f.fromEnv[name] == ""
}

// apiKey returns the key of --api-key (or $SMCP_API_KEY), else the one in
// --api-key-file; both is a usage error. A key given on the command line
// works, with one warning: ps and /proc show a process's arguments to
// every user of the machine, while its environment and a file of mode 600
// stay its user's.
func (f *flags) apiKey(key, file string, log *slog.Logger) (string, error) {
	if key != "" && file != "" {
		return "", usagef("use either --%s (or $%s) or --%s, not both", apiKeyFlag, envName(apiKeyFlag), apiKeyFileFlag)
	}
	if key != "" {
		if f.onCommandLine(apiKeyFlag) {
			log.Warn("--api-key on the command line is visible to other users of this machine (ps); use $SMCP_API_KEY or --api-key-file")
		}
		return key, nil
	}
	if file == "" {
		return "", nil
	}
	return readKeyFile(file)
}

// readKeyFile reads the key in the first line of path.
func readKeyFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", apiKeyFileFlag, err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if key := strings.TrimSpace(first); key != "" {
		return key, nil
	}
	return "", fmt.Errorf("--%s %s: the first line holds no key", apiKeyFileFlag, path)
}
