package placement

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

func secret(name string, lbls, annotations map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "mysqlfleet-system", Labels: lbls, Annotations: annotations,
	}}
}

func TestMemberFromSecret(t *testing.T) {
	registered := func(extra map[string]string) map[string]string {
		l := map[string]string{v1alpha1.MemberSecretLabel: "true"}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	tests := []struct {
		name    string
		secret  *corev1.Secret
		want    Member
		wantErr string
	}{
		{
			name: "aws member with region, labels and storage class override",
			secret: secret("aws-eu-west-1",
				registered(map[string]string{v1alpha1.CloudLabel: "aws", v1alpha1.RegionLabel: "eu-west-1", "tier": "gold"}),
				map[string]string{v1alpha1.StorageClassAnnotation: "io2"}),
			want: Member{
				Name: "aws-eu-west-1", Cloud: v1alpha1.CloudAWS, Region: "eu-west-1", StorageClassOverride: "io2",
				Labels: map[string]string{
					v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: "aws",
					v1alpha1.RegionLabel: "eu-west-1", "tier": "gold",
				},
			},
		},
		{
			name:   "gcp member without region or override",
			secret: secret("gcp-us-central1", registered(map[string]string{v1alpha1.CloudLabel: "gcp"}), nil),
			want: Member{
				Name: "gcp-us-central1", Cloud: v1alpha1.CloudGCP,
				Labels: map[string]string{v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: "gcp"},
			},
		},
		{
			name:   "azure member",
			secret: secret("azure-westeurope", registered(map[string]string{v1alpha1.CloudLabel: "azure"}), nil),
			want: Member{
				Name: "azure-westeurope", Cloud: v1alpha1.CloudAzure,
				Labels: map[string]string{v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: "azure"},
			},
		},
		{name: "nil secret", secret: nil, wantErr: "nil"},
		{
			name:    "not a registration",
			secret:  secret("m1", map[string]string{v1alpha1.CloudLabel: "aws"}, nil),
			wantErr: "not a member registration",
		},
		{
			name:    "registration label not true",
			secret:  secret("m1", map[string]string{v1alpha1.MemberSecretLabel: "false", v1alpha1.CloudLabel: "aws"}, nil),
			wantErr: "not a member registration",
		},
		{
			name:    "cloud label missing",
			secret:  secret("m1", registered(nil), nil),
			wantErr: `label mysqlfleet.io/cloud is missing`,
		},
		{
			name:    "unknown cloud",
			secret:  secret("m1", registered(map[string]string{v1alpha1.CloudLabel: "openstack"}), nil),
			wantErr: `mysqlfleet.io/cloud="openstack" is not a known cloud`,
		},
		{
			name:    "cloud is case sensitive",
			secret:  secret("m1", registered(map[string]string{v1alpha1.CloudLabel: "AWS"}), nil),
			wantErr: "not a known cloud",
		},
		{
			name:    "name cannot be a label value",
			secret:  secret("member.example.com", registered(map[string]string{v1alpha1.CloudLabel: "aws"}), nil),
			wantErr: "not a valid member name",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := MemberFromSecret(tt.secret)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestMemberFromSecretCopiesLabels(t *testing.T) {
	g := NewWithT(t)
	s := secret("m1", map[string]string{v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: "aws"}, nil)
	m, err := MemberFromSecret(s)
	g.Expect(err).NotTo(HaveOccurred())
	s.Labels["later"] = "x"
	g.Expect(m.Labels).NotTo(HaveKey("later"), "a member's facts must not change when the cached Secret is mutated")
}

func TestResolve(t *testing.T) {
	fleet := []Member{
		{Name: "gcp-us-central1", Cloud: v1alpha1.CloudGCP, Labels: map[string]string{v1alpha1.CloudLabel: "gcp", "env": "prod"}},
		{Name: "aws-eu-west-1", Cloud: v1alpha1.CloudAWS, Labels: map[string]string{v1alpha1.CloudLabel: "aws", "env": "prod"}},
		{Name: "azure-westeurope", Cloud: v1alpha1.CloudAzure, Labels: map[string]string{v1alpha1.CloudLabel: "azure", "env": "dev"}},
		{Name: "aws-us-east-1", Cloud: v1alpha1.CloudAWS, Labels: map[string]string{v1alpha1.CloudLabel: "aws"}},
	}
	tests := []struct {
		name        string
		placement   v1alpha1.Placement
		members     []Member
		wantNames   []string
		wantUnknown []string
		wantErr     string
	}{
		{
			name:      "names only, sorted",
			placement: v1alpha1.Placement{Members: []string{"gcp-us-central1", "aws-eu-west-1"}},
			members:   fleet,
			wantNames: []string{"aws-eu-west-1", "gcp-us-central1"},
		},
		{
			name:        "unknown names reported sorted and once, known still selected",
			placement:   v1alpha1.Placement{Members: []string{"zz-gone", "aws-eu-west-1", "aa-gone", "zz-gone"}},
			members:     fleet,
			wantNames:   []string{"aws-eu-west-1"},
			wantUnknown: []string{"aa-gone", "zz-gone"},
		},
		{
			name: "selector by cloud",
			placement: v1alpha1.Placement{MemberSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{v1alpha1.CloudLabel: "aws"},
			}},
			members:   fleet,
			wantNames: []string{"aws-eu-west-1", "aws-us-east-1"},
		},
		{
			name: "selector with expression on any Secret label",
			placement: v1alpha1.Placement{MemberSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}}},
			}},
			members:   fleet,
			wantNames: []string{"aws-eu-west-1", "gcp-us-central1"},
		},
		{
			name: "union of names and selector, deduplicated",
			placement: v1alpha1.Placement{
				Members:        []string{"azure-westeurope", "aws-eu-west-1"},
				MemberSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			},
			members:   fleet,
			wantNames: []string{"aws-eu-west-1", "azure-westeurope", "gcp-us-central1"},
		},
		{
			name:      "empty selector selects every member",
			placement: v1alpha1.Placement{MemberSelector: &metav1.LabelSelector{}},
			members:   fleet,
			wantNames: []string{"aws-eu-west-1", "aws-us-east-1", "azure-westeurope", "gcp-us-central1"},
		},
		{
			name:      "nil selector and no names selects nothing",
			placement: v1alpha1.Placement{},
			members:   fleet,
		},
		{
			name: "selector matching nothing",
			placement: v1alpha1.Placement{MemberSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{v1alpha1.CloudLabel: "oracle"},
			}},
			members: fleet,
		},
		{
			name:        "no registered members",
			placement:   v1alpha1.Placement{Members: []string{"aws-eu-west-1"}, MemberSelector: &metav1.LabelSelector{}},
			wantUnknown: []string{"aws-eu-west-1"},
		},
		{
			name: "invalid selector",
			placement: v1alpha1.Placement{MemberSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}},
			}},
			members: fleet,
			wantErr: "invalid placement.memberSelector",
		},
		{
			name: "In without values is invalid",
			placement: v1alpha1.Placement{MemberSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn}},
			}},
			members: fleet,
			wantErr: "invalid placement.memberSelector",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, unknown, err := Resolve(tt.placement, tt.members)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			names := []string{}
			for _, m := range got {
				names = append(names, m.Name)
			}
			if tt.wantNames == nil {
				tt.wantNames = []string{}
			}
			g.Expect(names).To(Equal(tt.wantNames))
			if tt.wantUnknown == nil {
				g.Expect(unknown).To(BeEmpty())
			} else {
				g.Expect(unknown).To(Equal(tt.wantUnknown))
			}
		})
	}
}

func TestResolveKeepsMemberFacts(t *testing.T) {
	g := NewWithT(t)
	m := Member{Name: "aws-eu-west-1", Cloud: v1alpha1.CloudAWS, Region: "eu-west-1", StorageClassOverride: "io2"}
	got, _, err := Resolve(v1alpha1.Placement{Members: []string{m.Name}}, []Member{m})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]Member{m}))
}
