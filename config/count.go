package config

import (
	"fmt"
	"strconv"
)

// Count is a whole number read from a flag or an environment variable,
// with an error that says what was expected rather than strconv's.
type Count int

// String formats the count in decimal.
func (c Count) String() string { return strconv.Itoa(int(c)) }

// UnmarshalText reads a count from an environment variable or flag.
func (c *Count) UnmarshalText(b []byte) error {
	v, err := strconv.Atoi(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a whole number", b)
	}
	*c = Count(v)
	return nil
}

// MarshalText writes the count in decimal.
func (c Count) MarshalText() ([]byte, error) { return []byte(c.String()), nil }
