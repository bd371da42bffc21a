package member

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// renderedSet is the StatefulSet render makes for a MySQLCluster of the engine, as a typed object.
func renderedSet(t *testing.T, engine v1alpha1.Engine, image string) *appsv1.StatefulSet {
	t.Helper()
	mc := &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns", UID: "uid"},
		Spec:       v1alpha1.MySQLClusterSpec{Engine: engine, Version: "10.11", Image: image, Replicas: 3},
	}
	objs, err := render.Render(mc, placement.Member{Name: "m", Cloud: v1alpha1.CloudAWS},
		render.Credentials{RootPassword: "pw", AdminPassword: "a", ReplicationPassword: "r"})
	if err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	toTyped(t, objs.StatefulSet, sts)
	sts.UID = "sts-uid"
	return sts
}

func TestWhatRenderWroteIsRead(t *testing.T) {
	g := NewWithT(t)
	for _, tt := range []struct {
		engine v1alpha1.Engine
		image  string
		want   mysql.Engine
	}{
		{v1alpha1.EngineMariaDB, "", mysql.MariaDB},
		{v1alpha1.EngineMySQL, "", mysql.MySQL},
		{v1alpha1.EngineMariaDB, "registry.example/db/custom:1", mysql.MariaDB},
		{v1alpha1.EngineMySQL, "registry.example/mariadb:11.4", mysql.MySQL},
	} {
		sts := renderedSet(t, tt.engine, tt.image)
		g.Expect(managed(sts)).To(BeTrue())
		k, err := readContract(sts)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(k).To(Equal(contract{engine: tt.want, credentialsSecret: "shop-credentials"}), "%s %s",
			tt.engine, tt.image)
	}
}

// The contract decides, whatever the Pod template says: the engine and the credentials Secret are never read
// back from the container's command, image or environment.
func TestContractDecidesOverThePodTemplate(t *testing.T) {
	g := NewWithT(t)
	sts := renderedSet(t, v1alpha1.EngineMariaDB, "")
	c := &sts.Spec.Template.Spec.Containers[0]
	c.Image = "docker.io/library/mysql:8.4"
	c.Command = []string{"sh", "-c", "exec docker-entrypoint.sh mysqld"}
	for i := range c.Env {
		if c.Env[i].ValueFrom != nil && c.Env[i].ValueFrom.SecretKeyRef != nil {
			c.Env[i].ValueFrom.SecretKeyRef.Name = "legacy-credentials"
		}
	}
	k, err := readContract(sts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k).To(Equal(contract{engine: mysql.MariaDB, credentialsSecret: "shop-credentials"}))
	d, _, err := desiredSet(sts, nil, PodIPResolver, time.Second, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Engine).To(Equal(mysql.MariaDB))
	job, err := seedJob(sts, 1, 0, "runner:1")
	g.Expect(err).NotTo(HaveOccurred())
	env := map[string]corev1.EnvVar{}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e
	}
	g.Expect(env["BACKUP_ENGINE"].Value).To(Equal("MariaDB"))
	g.Expect(env["SEED_TARGET_PWD"].ValueFrom.SecretKeyRef.Name).To(Equal("shop-credentials"))
	g.Expect(job.Spec.Template.Spec.Containers[0].Image).To(Equal(c.Image), "the dump tool of the servers' image")
}

// A StatefulSet without the contract (written by an older hub) or with a value that cannot be read is refused
// with the annotation named, never guessed at from the Pod template, which still says everything.
func TestMissingOrMalformedContractIsAnError(t *testing.T) {
	without := func(keys ...string) func(*appsv1.StatefulSet) {
		return func(sts *appsv1.StatefulSet) {
			for _, k := range keys {
				delete(sts.Annotations, k)
			}
		}
	}
	with := func(k, v string) func(*appsv1.StatefulSet) {
		return func(sts *appsv1.StatefulSet) { sts.Annotations[k] = v }
	}
	for _, tt := range []struct {
		name string
		edit func(*appsv1.StatefulSet)
		want []string
	}{
		{"written by an older hub", without(v1alpha1.EngineAnnotation, v1alpha1.CredentialsSecretAnnotation),
			[]string{"lacks mysqlfleet.io/engine and mysqlfleet.io/credentials-secret of the hub's contract", "older"}},
		{"no engine", without(v1alpha1.EngineAnnotation), []string{"lacks mysqlfleet.io/engine of"}},
		{"no Secret", without(v1alpha1.CredentialsSecretAnnotation),
			[]string{"lacks mysqlfleet.io/credentials-secret of"}},
		{"an unknown engine", with(v1alpha1.EngineAnnotation, "Postgres"),
			[]string{`mysqlfleet.io/engine="Postgres"`, "names no engine"}},
		{"the engine in another case", with(v1alpha1.EngineAnnotation, "mariadb"),
			[]string{`mysqlfleet.io/engine="mariadb"`}},
		{"an empty Secret name", with(v1alpha1.CredentialsSecretAnnotation, ""),
			[]string{`mysqlfleet.io/credentials-secret=""`, "no Secret name"}},
		{"a path for a Secret name", with(v1alpha1.CredentialsSecretAnnotation, "../x"),
			[]string{"no Secret name"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			sts := renderedSet(t, v1alpha1.EngineMariaDB, "")
			tt.edit(sts)
			_, err := readContract(sts)
			for _, w := range tt.want {
				g.Expect(err).To(MatchError(ContainSubstring(w)))
			}
			_, _, derr := desiredSet(sts, nil, PodIPResolver, time.Second, "")
			g.Expect(derr).To(MatchError(err.Error()), "the pass is refused with the same reason")
			_, serr := seedJob(sts, 1, 0, "runner:1")
			g.Expect(serr).To(MatchError(err.Error()), "no seed Job either")
		})
	}
}

func TestRequestedPrimary(t *testing.T) {
	g := NewWithT(t)
	sts := &appsv1.StatefulSet{}
	p, err := requestedPrimary(sts)
	g.Expect(p, err).To(BeNil())
	for v, want := range map[string]int{"0": 0, " 2 ": 2} {
		sts.Annotations = map[string]string{v1alpha1.PrimaryAnnotation: v}
		p, err := requestedPrimary(sts)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p).To(Equal(ptr.To(want)))
	}
	for _, v := range []string{"-1", "shop-1", "1.0"} {
		sts.Annotations = map[string]string{v1alpha1.PrimaryAnnotation: v}
		_, err := requestedPrimary(sts)
		g.Expect(err).To(HaveOccurred(), v)
	}
}

func TestDesiredSetMarksUnresolvableInstances(t *testing.T) {
	g := NewWithT(t)
	sts := renderedSet(t, v1alpha1.EngineMariaDB, "")
	ip := func(name, addr string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{PodIP: addr}}
	}
	deleted := ip("shop-3", "10.0.0.4")
	deleted.DeletionTimestamp = ptr.To(metav1.Now())
	onNode := ip("shop-0", "10.0.0.1")
	onNode.Spec.NodeName = "node-a"
	d, targets, err := desiredSet(sts, []*corev1.Pod{onNode, ip("shop-1", ""), nil, deleted},
		PodIPResolver, 7*time.Second, "node-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.WithController).To(Equal([]bool{true, false, false, false}))
	g.Expect(d.Engine).To(Equal(mysql.MariaDB))
	g.Expect(d.Name).To(Equal("shop"))
	g.Expect(d.MaxLag).To(Equal(7 * time.Second))
	// Replicas replicate from, and the controller connects to, the reserved administrative port.
	g.Expect(d.Addresses).To(Equal([]clustering.Address{{Host: "10.0.0.1", Port: 33062}, {}, {},
		{Host: "10.0.0.4", Port: 33062}}))
	g.Expect(targets[0].addr).To(Equal(clustering.Address{Host: "10.0.0.1", Port: 33062}))
	g.Expect(targets[1].addr).To(Equal(clustering.Address{}))
	g.Expect(targets[0].err).NotTo(HaveOccurred())
	g.Expect(targets[0].unhealthy).To(BeEmpty())
	g.Expect(targets[1].err).To(MatchError(ContainSubstring("has no IP")))
	g.Expect(targets[2].err).To(MatchError(ContainSubstring("shop-2 does not exist")))
	// A Pod being deleted is still reached, and unhealthy.
	g.Expect(targets[3].err).NotTo(HaveOccurred())
	g.Expect(targets[3].unhealthy).To(Equal("pod shop-3 is being deleted"))
}

func plan(kind clustering.Kind, from, to int, ins ...clustering.InstanceReport) clustering.Plan {
	p := clustering.Plan{Decision: clustering.Decision{Kind: kind, From: from, To: to}}
	switch kind {
	case clustering.Bootstrap, clustering.Adopt, clustering.Failover, clustering.Switchover:
		p.Completed = &p.Decision // as Decide does
	}
	p.Report = clustering.Report{Decision: p.Decision, Primary: -1, Instances: ins}
	for _, in := range ins {
		if in.Role == clustering.RolePrimary {
			p.Report.Primary = in.Index
		}
	}
	return p
}

func TestBuildReport(t *testing.T) {
	g := NewWithT(t)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	lag := 2900 * time.Millisecond
	ins := []clustering.InstanceReport{
		{Index: 0, Role: clustering.RolePrimary, Executed: "0-1-5"},
		{Index: 1, Role: clustering.RoleReplica, InSync: true, Lag: &lag, Executed: "0-1-5"},
		{Index: 2, Role: clustering.RoleErrant, Errant: "0-3-1", Executed: "0-1-5,0-3-1"},
	}
	rep := buildReport(sts, plan(clustering.Failover, 1, 0, ins...), nil, nil)
	g.Expect(rep).To(Equal(v1alpha1.ReplicationReport{
		Primary: "shop-0",
		Instances: []v1alpha1.ReplicationInstance{
			{Pod: "shop-0", Role: v1alpha1.ReplicationRolePrimary},
			{Pod: "shop-1", Role: v1alpha1.ReplicationRoleReplica, InSync: true, LagSeconds: ptr.To[int64](2)},
			{Pod: "shop-2", Role: v1alpha1.ReplicationRoleErrant, ErrantGTIDs: "0-3-1"},
		},
		Decision:       v1alpha1.ReplicationDecision{Kind: "Failover", From: "shop-1", To: "shop-0"},
		LastTransition: &v1alpha1.ReplicationDecision{Kind: "Failover", From: "shop-1", To: "shop-0"},
	}))

	// A steady pass keeps the last transition; executed sets, which move with every write, are not reported.
	ins[0].Executed, ins[1].Executed = "0-1-9", "0-1-9"
	steady := buildReport(sts, plan(clustering.Steady, -1, -1, ins...), nil, &rep)
	g.Expect(steady.LastTransition).To(Equal(rep.LastTransition))
	g.Expect(steady.Decision).To(Equal(v1alpha1.ReplicationDecision{Kind: "Steady"}))

	// A switchover whose plan failed is no transition, and the failure is the last error.
	failed := buildReport(sts, plan(clustering.Switchover, 0, 1, ins...), errors.New("boom"), &steady)
	g.Expect(failed.LastTransition).To(Equal(rep.LastTransition))
	g.Expect(failed.LastError).To(Equal("boom"))

	// A repair that completes a change another pass recorded (a standby finishing a failover) reports it.
	finishing := plan(clustering.Repair, -1, -1, ins...)
	finishing.Completed = &clustering.Decision{Kind: clustering.Failover, From: 2, To: 0, Reason: "primary 2 is unreachable"}
	finished := buildReport(sts, finishing, nil, &steady)
	g.Expect(finished.LastTransition).To(Equal(&v1alpha1.ReplicationDecision{Kind: "Failover", From: "shop-2",
		To: "shop-0", Reason: "primary 2 is unreachable"}))
	g.Expect(finished.Decision).To(Equal(v1alpha1.ReplicationDecision{Kind: "Repair"}))

	un := unobservedReport(&rep, errors.New("no Secret"))
	g.Expect(un).To(Equal(v1alpha1.ReplicationReport{
		Decision:  v1alpha1.ReplicationDecision{Kind: kindUnobserved, Reason: "no Secret"},
		LastError: "no Secret", LastTransition: rep.LastTransition,
	}))
}

func TestRoleLabelChanges(t *testing.T) {
	g := NewWithT(t)
	pod := func(name, role string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "x"}}}
		if role != "" {
			p.Labels[v1alpha1.RoleLabel] = role
		}
		return p
	}
	pods := []*corev1.Pod{pod("s-0", "replica"), pod("s-1", "primary"), pod("s-2", "replica"), nil,
		pod("s-4", ""), pod("s-5", "replica")}
	rep := v1alpha1.ReplicationReport{Instances: []v1alpha1.ReplicationInstance{
		{Pod: "s-0", Role: v1alpha1.ReplicationRolePrimary},
		{Pod: "s-1", Role: v1alpha1.ReplicationRoleUnreachable},
		{Pod: "s-2", Role: v1alpha1.ReplicationRoleReplica, InSync: true},
		{Pod: "s-3", Role: v1alpha1.ReplicationRoleUnreachable},
		{Pod: "s-4", Role: v1alpha1.ReplicationRoleReplica, InSync: true},
		// A replica that lags beyond the bound leaves <name>-replicas until it catches up.
		{Pod: "s-5", Role: v1alpha1.ReplicationRoleReplica},
	}}
	// The old primary loses its label before the new one, of a lower ordinal, gets it.
	g.Expect(roleLabelChanges(pods, rep, false)).To(Equal([]labelChange{
		{Pod: "s-1", Demotes: true}, {Pod: "s-0", Value: "primary"}, {Pod: "s-4", Value: "replica"}, {Pod: "s-5"},
	}))
	// After a failed plan a role is only ever taken away.
	g.Expect(roleLabelChanges(pods, rep, true)).To(Equal([]labelChange{{Pod: "s-1", Demotes: true}, {Pod: "s-5"}}))
	// A primary that becomes a replica is one change, ahead of the new primary's; after a failed plan it keeps
	// its label (the new primary gets none).
	pods = []*corev1.Pod{pod("s-0", ""), pod("s-1", "primary")}
	rep.Instances = []v1alpha1.ReplicationInstance{
		{Pod: "s-0", Role: v1alpha1.ReplicationRolePrimary},
		{Pod: "s-1", Role: v1alpha1.ReplicationRoleReplica, InSync: true},
	}
	g.Expect(roleLabelChanges(pods, rep, false)).To(Equal([]labelChange{
		{Pod: "s-1", Value: "replica", Demotes: true}, {Pod: "s-0", Value: "primary"},
	}))
	g.Expect(roleLabelChanges(pods, rep, true)).To(BeEmpty())
	// The pass that starts a failover stopped the replicas' receivers: the replicas it reached keep their label
	// (and none gains one), the lost primary and an unreachable or errant replica lose theirs.
	pods = []*corev1.Pod{pod("s-0", "primary"), pod("s-1", "replica"), pod("s-2", ""), pod("s-3", "replica"),
		pod("s-4", "replica")}
	starting := v1alpha1.ReplicationReport{
		Decision: v1alpha1.ReplicationDecision{Kind: string(clustering.FailoverStarted)},
		Instances: []v1alpha1.ReplicationInstance{
			{Pod: "s-0", Role: v1alpha1.ReplicationRoleUnreachable},
			{Pod: "s-1", Role: v1alpha1.ReplicationRoleNone},
			{Pod: "s-2", Role: v1alpha1.ReplicationRoleNone},
			{Pod: "s-3", Role: v1alpha1.ReplicationRoleUnreachable},
			{Pod: "s-4", Role: v1alpha1.ReplicationRoleErrant},
		}}
	g.Expect(roleLabelChanges(pods, starting, false)).To(Equal([]labelChange{
		{Pod: "s-0", Demotes: true}, {Pod: "s-3"}, {Pod: "s-4"},
	}))
	// A switchover's pass keeps the labels of the replicas it pointed at the new primary, unless its plan failed.
	switched := []*corev1.Pod{pod("s-0", "primary"), pod("s-1", "replica"), pod("s-2", "replica")}
	switching := v1alpha1.ReplicationReport{
		Decision: v1alpha1.ReplicationDecision{Kind: string(clustering.Switchover)},
		Instances: []v1alpha1.ReplicationInstance{
			{Pod: "s-0", Role: v1alpha1.ReplicationRoleNone},
			{Pod: "s-1", Role: v1alpha1.ReplicationRolePrimary},
			{Pod: "s-2", Role: v1alpha1.ReplicationRoleNone},
		}}
	g.Expect(roleLabelChanges(switched, switching, false)).To(Equal([]labelChange{
		{Pod: "s-0", Demotes: true}, {Pod: "s-1", Value: "primary"},
	}))
	g.Expect(roleLabelChanges(switched, switching, true)).To(Equal([]labelChange{{Pod: "s-0", Demotes: true}, {Pod: "s-2"}}))
	// Any other pass without a primary takes them away.
	starting.Decision.Kind = string(clustering.Refused)
	g.Expect(roleLabelChanges(pods, starting, false)).To(Equal([]labelChange{
		{Pod: "s-0", Demotes: true}, {Pod: "s-1"}, {Pod: "s-3"}, {Pod: "s-4"},
	}))
	// A report that saw nothing changes nothing.
	g.Expect(roleLabelChanges(pods, v1alpha1.ReplicationReport{}, false)).To(BeEmpty())
}

func TestReportConfigMapIsANoOpWhenNothingChanged(t *testing.T) {
	g := NewWithT(t)
	sts := renderedSet(t, v1alpha1.EngineMariaDB, "")
	rep := v1alpha1.ReplicationReport{Primary: "shop-0", Decision: v1alpha1.ReplicationDecision{Kind: "Steady"}}
	rec := clustering.Record{Primary: ptr.To(0)}
	cm, err := reportConfigMap(sts, &rep, rec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cm.Labels).NotTo(HaveKey(v1alpha1.ClusterUIDLabel))
	g.Expect(cm.Annotations).To(HaveKeyWithValue(v1alpha1.StatefulSetUIDAnnotation, "sts-uid"))
	g.Expect(cm.OwnerReferences).To(HaveLen(1))
	g.Expect(cm.OwnerReferences[0].BlockOwnerDeletion).To(BeNil())

	// What the API server returns (plus what others added) merges back to itself.
	live := cm.DeepCopy()
	live.ResourceVersion = "7"
	live.Labels["team"] = "payments"
	live.Data["note"] = "kept"
	again, err := reportConfigMap(sts, &rep, rec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(equality.Semantic.DeepEqual(merged(live, again), live)).To(BeTrue())
	// Saving a record keeps the report it holds.
	saved, err := reportConfigMap(sts, nil, clustering.Record{Primary: ptr.To(1)})
	g.Expect(err).NotTo(HaveOccurred())
	next := merged(live, saved)
	g.Expect(next.Data[v1alpha1.ReplicationReportKey]).To(Equal(live.Data[v1alpha1.ReplicationReportKey]))
	g.Expect(readRecord(next)).To(Equal(clustering.Record{Primary: ptr.To(1)}))
	g.Expect(readReport(next)).To(Equal(&rep))

	next.Data[v1alpha1.ReplicationRecordKey] = "{not json"
	_, err = readRecord(next)
	g.Expect(err).To(MatchError(ContainSubstring("will not act without it")))
}

func TestAnUnreadableRecordIsLeftAsItIs(t *testing.T) {
	g := NewWithT(t)
	sts := renderedSet(t, v1alpha1.EngineMariaDB, "")
	live, err := reportConfigMap(sts, nil, clustering.Record{})
	g.Expect(err).NotTo(HaveOccurred())
	live.Data[v1alpha1.ReplicationRecordKey] = `{"primary":"two"}`
	s := &scope{sts: sts, cm: live}
	s.rec, s.recErr = readRecord(live)
	g.Expect(s.recErr).To(HaveOccurred())
	rep := unobservedReport(nil, s.recErr)
	desired, err := s.desiredConfigMap(&rep)
	g.Expect(err).NotTo(HaveOccurred())
	next := merged(live, desired)
	g.Expect(next.Data[v1alpha1.ReplicationRecordKey]).To(Equal(`{"primary":"two"}`))
	g.Expect(readReport(next)).To(Equal(&rep))
}

// The report carries the engine's Async with the time its window opened, kept while it lasts (no write per
// pass), dropped when it closes, and kept by a pass that could not look.
func TestAsyncWindow(t *testing.T) {
	g := NewWithT(t)
	opened, later := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(2000, 0))
	async := plan(clustering.Steady, -1, -1)
	async.Report.Async = "semi-sync is off"
	var first v1alpha1.ReplicationReport
	asyncWindow(&first, async, nil, opened)
	g.Expect(first.Async).To(Equal("semi-sync is off"))
	g.Expect(first.AsyncSince).To(Equal(&opened))
	var again v1alpha1.ReplicationReport
	asyncWindow(&again, async, &first, later)
	g.Expect(again.AsyncSince).To(Equal(&opened), "kept while the window lasts")
	un := unobservedReport(&again, errors.New("no Secret"))
	g.Expect(un.AsyncSince).To(Equal(&opened), "a pass that could not look closes nothing")
	var closed v1alpha1.ReplicationReport
	asyncWindow(&closed, plan(clustering.Repair, -1, -1), &again, later)
	g.Expect(closed.Async).To(BeEmpty())
	g.Expect(closed.AsyncSince).To(BeNil())

	sts := renderedSet(t, v1alpha1.EngineMariaDB, "")
	d, _, err := desiredSet(sts, nil, PodIPResolver, time.Second, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Preferred).To(BeFalse(), "Required without the annotation")
	sts.Annotations[v1alpha1.DurabilityAnnotation] = "Preferred"
	d, _, err = desiredSet(sts, nil, PodIPResolver, time.Second, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Preferred).To(BeTrue())
}

// TestNextPass: the pass that chooses a new primary follows the one that stopped the receivers at once; a pass
// that changed something or failed comes back after the busy interval, an idle one after the poll interval.
func TestNextPass(t *testing.T) {
	g := NewWithT(t)
	tm := Timing{}.withDefaults()
	g.Expect(tm.nextPass(string(clustering.FailoverStarted), true, false)).To(BeNumerically("<=", time.Millisecond))
	g.Expect(tm.nextPass(string(clustering.FailoverStarted), true, true)).To(Equal(tm.BusyInterval),
		"a first pass whose plan failed (a receiver not stopped) is not followed at once")
	g.Expect(tm.nextPass(string(clustering.Failover), true, false)).To(Equal(tm.BusyInterval))
	g.Expect(tm.nextPass(string(clustering.Steady), false, true)).To(Equal(tm.BusyInterval))
	g.Expect(tm.nextPass(string(clustering.Steady), false, false)).To(Equal(tm.PollInterval))
}
