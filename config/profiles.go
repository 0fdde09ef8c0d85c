package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// Profile names a knee profile file (written by `kneewatch sweep` or
// `kneewatch sim knee`). Targets refer to it by Name.
type Profile struct {
	// Name is what targets[].profile refers to. Required, unique.
	Name string `yaml:"name"`
	// File is the profile's YAML file, relative to the config file's
	// directory. Required; Load checks that it exists.
	File string `yaml:"file"`
}

func validateProfiles(profiles []Profile, p *strictyaml.List) {
	seen := map[string]int{}
	for i, pr := range profiles {
		path := fmt.Sprintf("profiles[%d]", i)
		switch {
		case pr.Name == "":
			p.Add(path+".name", "missing (targets refer to the profile by this name)")
		case strings.TrimSpace(pr.Name) != pr.Name:
			p.Add(path+".name", "%q has leading or trailing spaces", pr.Name)
		default:
			if j, dup := seen[pr.Name]; dup {
				p.Add(path+".name", "%q is already used by profiles[%d]", pr.Name, j)
			} else {
				seen[pr.Name] = i
			}
		}
		if pr.File == "" {
			p.Add(path+".file", "missing (the knee profile's YAML file)")
		}
	}
}

// profileNames lists the configured profile names, sorted, for error hints.
func profileNames(profiles []Profile) []string {
	names := make([]string, 0, len(profiles))
	for _, pr := range profiles {
		names = append(names, pr.Name)
	}
	slices.Sort(names)
	return names
}

// profilesInDir lists one Profile per *.yaml or *.yml file in dir, named by
// the file name without its extension, in name order.
func profilesInDir(dir string) ([]Profile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Profile
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		out = append(out, Profile{Name: strings.TrimSuffix(e.Name(), ext), File: filepath.Join(dir, e.Name())})
	}
	return out, nil
}

// checkProfileFiles reports profile files that cannot be opened as files.
func checkProfileFiles(profiles []Profile, p *strictyaml.List) {
	for i, pr := range profiles {
		if pr.File == "" {
			continue // reported by validateProfiles
		}
		info, err := os.Stat(pr.File)
		switch {
		case err != nil:
			p.Add(fmt.Sprintf("profiles[%d].file", i), "%v", err)
		case info.IsDir():
			p.Add(fmt.Sprintf("profiles[%d].file", i), "%s is a directory, want a knee profile file", pr.File)
		}
	}
}
