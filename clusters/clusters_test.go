package clusters

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestFleetDefinitions(t *testing.T) {
	g := NewWithT(t)
	hub, members, err := Fleet()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hub.Name).To(Equal("hub"))
	clouds := map[string][]string{}
	for _, m := range members {
		g.Expect(m.Cloud).To(BeElementOf("aws", "azure", "gcp"), m.Name)
		g.Expect(m.Region).NotTo(BeEmpty(), m.Name)
		clouds[m.Cloud] = append(clouds[m.Cloud], m.StorageClassNames()...)
	}
	// The classes mysqlfleet defaults to on each cloud must exist there, or PVCs would never bind.
	g.Expect(clouds["aws"]).To(ContainElement("gp3"))
	g.Expect(clouds["azure"]).To(ContainElements("managed-csi", "managed-premium"))
	g.Expect(clouds["gcp"]).To(ContainElements("pd-ssd", "standard-rwo"))

	// Every cluster can also be a kind cluster, with a kind configuration of its own name.
	for _, d := range append(members, hub) {
		g.Expect(d.Kind).NotTo(BeNil(), d.Name)
		g.Expect(d.Kind.Kind).To(Equal("Cluster"), d.Name)
		g.Expect(d.Kind.APIVersion).To(Equal("kind.x-k8s.io/v1alpha4"), d.Name)
		g.Expect(d.Kind.Nodes).NotTo(BeEmpty(), d.Name)
	}
}
