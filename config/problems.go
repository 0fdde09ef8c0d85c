package config

import (
	"errors"
	"fmt"
)

// problems collects validation errors, each prefixed with the field path it
// is about, so one run of --config.check reports every mistake.
type problems struct {
	errs []error
}

func (p *problems) add(path, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

// err joins the problems, one a line, or returns nil when there are none.
func (p *problems) err() error { return errors.Join(p.errs...) }

// prefixLines puts prefix before each of the (possibly joined) errors in
// err: "kneewatch.yml: targets[0].engine: …", one a line.
func prefixLines(prefix string, err error) error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if joined, ok := e.(interface{ Unwrap() []error }); ok {
			for _, inner := range joined.Unwrap() {
				walk(inner)
			}
			return
		}
		out = append(out, fmt.Errorf("%s: %w", prefix, e))
	}
	walk(err)
	return errors.Join(out...)
}
