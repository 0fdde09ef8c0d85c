package knee

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// pathAt names the field at a line of a decoded document, so that decoding
// errors, which yaml reports by line only, also name the field. When several
// fields share the line (a flow mapping such as {p50: 1, p99: 2}) it names
// their common parent; it returns "" when no field starts on that line.
func pathAt(root *yaml.Node, line int) string {
	var found [][]string
	var walk func(n *yaml.Node, path []string)
	walk = func(n *yaml.Node, path []string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := append(path[:len(path):len(path)], n.Content[i].Value)
				if n.Content[i].Line == line {
					found = append(found, p)
				}
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := append(path[:len(path):len(path)], "["+strconv.Itoa(i)+"]")
				if c.Kind == yaml.ScalarNode && c.Line == line {
					found = append(found, p)
				}
				walk(c, p)
			}
		}
	}
	walk(root, nil)
	if len(found) == 0 {
		return ""
	}
	common := found[0]
	for _, p := range found[1:] {
		n := 0
		for n < len(common) && n < len(p) && common[n] == p[n] {
			n++
		}
		common = common[:n]
	}
	return joinPath(common)
}

// joinPath writes segments as a field path: "points", "[2]", "p99" → "points[2].p99".
func joinPath(segments []string) string {
	var b strings.Builder
	for i, s := range segments {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}
