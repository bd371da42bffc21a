package member

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

func finishedPod(name string, phase corev1.PodPhase, at time.Time, message string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{batchv1.JobNameLabel: name + "-job"}},
		Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
			Name: render.BackupContainerName,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				FinishedAt: metav1.NewTime(at), Message: message, Reason: "Error"}},
		}}},
	}
}

func TestBackupOutcomesComeFromTheRunnersReport(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	manifest := `{"backup":{"name":"20261124T030000000Z","endTime":"2026-11-24T03:00:42.123Z","durationSeconds":42.1,` +
		`"size":1048576,"gtidPosition":"0-1001-7","pod":"db-1"}}`

	ok, done := outcomeOf(finishedPod("a", corev1.PodSucceeded, t0.Add(43*time.Second), manifest))
	g.Expect(done).To(BeTrue())
	g.Expect(ok.backup).To(Equal(&v1alpha1.BackupRecord{Name: "20261124T030000000Z",
		Time: metav1.NewTime(t0.Add(42 * time.Second)), DurationMilliseconds: 42100, Size: 1048576,
		GTIDPosition: "0-1001-7", Pod: "db-1", Method: v1alpha1.BackupLogical}), "a manifest without a method is logical")
	physical, _ := outcomeOf(finishedPod("p", corev1.PodSucceeded, t0, strings.Replace(manifest, `"pod":"db-1"`,
		`"pod":"db-1","method":"physical"`, 1)))
	g.Expect(physical.backup.Method).To(Equal(v1alpha1.BackupPhysical))

	// A Pod that succeeded without the runner's manifest made no backup.
	empty, _ := outcomeOf(finishedPod("b", corev1.PodSucceeded, t0.Add(time.Hour), ""))
	g.Expect(empty.backup).To(BeNil())
	g.Expect(empty.reason).To(ContainSubstring("without a backup manifest"))
	failed, _ := outcomeOf(finishedPod("c", corev1.PodFailed, t0.Add(2*time.Hour),
		`{"error":"no server answers: db-replicas: connection refused"}`))
	g.Expect(failed.reason).To(Equal("no server answers: db-replicas: connection refused"))
	_, running := outcomeOf(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	g.Expect(running).To(BeFalse())

	// The newest success stays while Pods come and go; a failure shows only while it is newer.
	b := backups(nil, []jobOutcome{ok, failed})
	g.Expect(b.LastSuccessful.Name).To(Equal("20261124T030000000Z"))
	g.Expect(b.LastFailure.Reason).To(ContainSubstring("connection refused"))
	later := ok
	later.backup = &v1alpha1.BackupRecord{Name: "20261124T060000000Z", Time: metav1.NewTime(t0.Add(3 * time.Hour))}
	b = backups(b, []jobOutcome{later})
	g.Expect(b.LastSuccessful.Name).To(Equal("20261124T060000000Z"))
	g.Expect(b.LastFailure).To(BeNil(), "a failure older than the last success is old news")
	g.Expect(backups(b, nil)).To(Equal(b), "what was reported stays when the Pods are gone")
	g.Expect(backups(nil, nil)).To(BeNil())
}
