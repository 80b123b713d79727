package main

import "runtime/debug"

// version reports the franz-go module this binary was built with.
func version() map[string]any {
	out := map[string]any{"errors": []string{}}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/twmb/franz-go" {
				out["franzGo"] = dep.Version
			}
		}
	}
	return out
}
