// Package placement turns member registration Secrets into member facts and resolves a MySQLCluster's placement
// against the registered members. It is pure: callers list the Secrets; nothing here talks to an API server.
package placement

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Member is what mysqlfleet knows about one registered member cluster. Rendering depends on these facts only, so
// the same MySQLCluster renders the same objects for the same member wherever it is computed.
type Member struct {
	// Name is the registration Secret's name. It is a DNS-1123 label because it becomes a label value and part of
	// backup object keys in every member.
	Name string
	// Cloud picks the default storage class.
	Cloud v1alpha1.Cloud
	// Region is informational (status, selectors); it may be empty.
	Region string
	// Labels are all the registration Secret's labels, so that a memberSelector can use any of them.
	Labels map[string]string
	// StorageClassOverride is the registration Secret's storage class annotation; empty when not set.
	StorageClassOverride string
	// Namespaces are the only namespaces the member's credential may use, sorted; nil means every namespace.
	Namespaces []string
}

// MemberFromSecret reads a member registration Secret. It refuses a Secret that is not labelled as a registration,
// whose name cannot be a label value, or whose cloud label is missing or unknown: guessing a cloud would pick the
// wrong storage class.
func MemberFromSecret(s *corev1.Secret) (Member, error) {
	if s == nil {
		return Member{}, fmt.Errorf("member registration Secret is nil")
	}
	if s.Labels[v1alpha1.MemberSecretLabel] != "true" {
		return Member{}, fmt.Errorf("secret %s/%s is not a member registration: label %s=true is missing",
			s.Namespace, s.Name, v1alpha1.MemberSecretLabel)
	}
	if errs := validation.IsDNS1123Label(s.Name); len(errs) > 0 {
		return Member{}, fmt.Errorf("member registration Secret %s/%s: name is not a valid member name: %s",
			s.Namespace, s.Name, strings.Join(errs, "; "))
	}
	cloud, ok := s.Labels[v1alpha1.CloudLabel]
	if !ok || cloud == "" {
		return Member{}, fmt.Errorf("member %s: label %s is missing; set it to aws, azure or gcp",
			s.Name, v1alpha1.CloudLabel)
	}
	switch c := v1alpha1.Cloud(cloud); c {
	case v1alpha1.CloudAWS, v1alpha1.CloudAzure, v1alpha1.CloudGCP:
	default:
		return Member{}, fmt.Errorf("member %s: label %s=%q is not a known cloud; use aws, azure or gcp",
			s.Name, v1alpha1.CloudLabel, cloud)
	}
	var namespaces []string
	if v := strings.TrimSpace(s.Annotations[v1alpha1.NamespacesAnnotation]); v != "" {
		for _, ns := range strings.Split(v, ",") {
			ns = strings.TrimSpace(ns)
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return Member{}, fmt.Errorf("member %s: annotation %s: %q is not a namespace name: %s",
					s.Name, v1alpha1.NamespacesAnnotation, ns, strings.Join(errs, "; "))
			}
			namespaces = append(namespaces, ns)
		}
		slices.Sort(namespaces)
		namespaces = slices.Compact(namespaces)
	}
	lbls := make(map[string]string, len(s.Labels))
	for k, v := range s.Labels {
		lbls[k] = v
	}
	return Member{
		Name:                 s.Name,
		Cloud:                v1alpha1.Cloud(cloud),
		Region:               s.Labels[v1alpha1.RegionLabel],
		Labels:               lbls,
		StorageClassOverride: s.Annotations[v1alpha1.StorageClassAnnotation],
		Namespaces:           namespaces,
	}, nil
}

// Resolve returns the members a placement chooses: the union of the named members and those the selector
// matches, sorted by name and without duplicates, so that callers iterate and report in a stable order. unknown
// lists the named members that are not registered (sorted); the caller reports them in a condition rather than
// failing, because the other members can still be served. A nil selector selects nothing; an empty one selects
// every member. Only an invalid selector is an error.
func Resolve(p v1alpha1.Placement, members []Member) (selected []Member, unknown []string, err error) {
	sel := labels.Nothing()
	if p.MemberSelector != nil {
		sel, err = metav1.LabelSelectorAsSelector(p.MemberSelector)
		if err != nil {
			return nil, nil, fmt.Errorf("invalid placement.memberSelector: %w", err)
		}
	}

	byName := make(map[string]Member, len(members))
	for _, m := range members {
		if _, dup := byName[m.Name]; !dup {
			byName[m.Name] = m
		}
	}

	chosen := map[string]Member{}
	for _, name := range p.Members {
		if m, ok := byName[name]; ok {
			chosen[name] = m
		} else if !slices.Contains(unknown, name) {
			unknown = append(unknown, name)
		}
	}
	for name, m := range byName {
		if sel.Matches(labels.Set(m.Labels)) {
			chosen[name] = m
		}
	}

	for _, m := range chosen {
		selected = append(selected, m)
	}
	slices.SortFunc(selected, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(unknown)
	return selected, unknown, nil
}

// AllowsNamespace tells whether the member's credential may be used in namespace ns.
func (m Member) AllowsNamespace(ns string) bool {
	return len(m.Namespaces) == 0 || slices.Contains(m.Namespaces, ns)
}
