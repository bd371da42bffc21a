// Package clusters holds the fleet definitions: one YAML file per cluster, embedded so that tests, the local
// fleet (make demo), the e2e suite and the benchmark all read the same source of truth.
package clusters

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"

	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// Role of a cluster in the fleet.
type Role string

const (
	RoleHub    Role = "hub"
	RoleMember Role = "member"
)

// StorageClass is a class the cluster offers.
type StorageClass struct {
	Name string `json:"name"`
	// Default marks the cluster's default class (storageclass.kubernetes.io/is-default-class).
	Default bool `json:"default,omitempty"`
}

// Definition is one cluster of the fleet.
type Definition struct {
	Name   string `json:"name"`
	Role   Role   `json:"role"`
	Cloud  string `json:"cloud,omitempty"`
	Region string `json:"region,omitempty"`
	// Labels are extra facts about a member, set on its registration Secret for memberSelector.
	Labels         map[string]string `json:"labels,omitempty"`
	StorageClasses []StorageClass    `json:"storageClasses,omitempty"`
	// Kind is the cluster's kind configuration (kind.x-k8s.io/v1alpha4 Cluster), for fleets of kind clusters.
	Kind *kindv1alpha4.Cluster `json:"kind,omitempty"`
}

// StorageClassNames lists the names of the classes the cluster offers.
func (d Definition) StorageClassNames() []string {
	names := make([]string, 0, len(d.StorageClasses))
	for _, sc := range d.StorageClasses {
		names = append(names, sc.Name)
	}
	return names
}

// All returns every definition, sorted by name.
func All() ([]Definition, error) {
	entries, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	defs := make([]Definition, 0, len(entries))
	for _, e := range entries {
		data, err := files.ReadFile(e)
		if err != nil {
			return nil, err
		}
		var d Definition
		if err := yaml.UnmarshalStrict(data, &d); err != nil {
			return nil, fmt.Errorf("clusters/%s: %w", e, err)
		}
		if d.Name+".yaml" != path.Base(e) {
			return nil, fmt.Errorf("clusters/%s: name %q must match the file name", e, d.Name)
		}
		if d.Role != RoleHub && d.Role != RoleMember {
			return nil, fmt.Errorf("clusters/%s: role must be hub or member, not %q", e, d.Role)
		}
		if d.Kind != nil && d.Kind.Name != d.Name {
			return nil, fmt.Errorf("clusters/%s: kind cluster name %q must be the cluster's name", e, d.Kind.Name)
		}
		defs = append(defs, d)
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs, nil
}

// Fleet returns the hub and the members.
func Fleet() (hub Definition, members []Definition, err error) {
	defs, err := All()
	if err != nil {
		return hub, nil, err
	}
	hubs := 0
	for _, d := range defs {
		switch d.Role {
		case RoleHub:
			hub = d
			hubs++
		case RoleMember:
			members = append(members, d)
		}
	}
	if hubs != 1 {
		return hub, nil, fmt.Errorf("clusters: want exactly one hub, found %d", hubs)
	}
	return hub, members, nil
}
