package config

import (
	"fmt"
	"strconv"
)

// Ratio is a share, read from a flag or an environment variable, with an
// error that says what was expected rather than strconv's.
type Ratio float64

// String formats the ratio as it would be given.
func (r Ratio) String() string { return strconv.FormatFloat(float64(r), 'g', -1, 64) }

// UnmarshalText reads a ratio from an environment variable or flag.
func (r *Ratio) UnmarshalText(b []byte) error {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", b)
	}
	*r = Ratio(v)
	return nil
}

// MarshalText writes the ratio as String does.
func (r Ratio) MarshalText() ([]byte, error) { return []byte(r.String()), nil }
