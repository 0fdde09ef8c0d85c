// Command kneewatch tells an on-call team how close each GPU LLM-serving
// replica is to its knee. This file only wires flags and subcommands; the
// work lives in the packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand: its one-line summary and its entry point.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists every subcommand in one place.
var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "kneewatch:", err)
		}
		os.Exit(1)
	}
}

// errUsage marks an error the user can fix by reading the usage text.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return fmt.Errorf("%w: a command is required", errUsage)
		}
		return nil
	}
	// --version as Prometheus and its exporters spell it; the version
	// command stays for scripts that use it.
	if args[0] == "--version" || args[0] == "-version" {
		return commands["version"].run(ctx, args[1:], stdout, stderr)
	}
	c, ok := commands[args[0]]
	if !ok {
		usage(stderr)
		return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "kneewatch: headroom to the knee for GPU LLM-serving replicas")
	fmt.Fprintln(w, "\nUsage: kneewatch <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'kneewatch <command> -h' for a command's flags, 'kneewatch --version' for the version.")
}
