package config

import (
	"testing"
)

// FuzzParse fuzzes config loading. Seeds are the example and the invalid
// fixtures, under testdata/fuzz/FuzzParse/. Whatever the bytes, Parse does
// not panic; a config it accepts validates and prints (secrets masked).
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		// Parsed as if beside the example, whose profile files exist there, so
		// accepted configs are reached, not only the missing-file error.
		c, err := Parse(data, "testdata/example-root/kneewatch.yml")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error with no text")
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config Validate rejects: %v", err)
		}
		_ = c.String()
	})
}
