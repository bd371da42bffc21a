package member

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// Seeding. When the engine decides that an instance which has executed nothing cannot get what it lacks from the
// primary's binary logs (clustering's ActionSeed), the controller creates the Job <set>-seed-<ordinal>, owned by
// the StatefulSet (garbage-collected with it) and labelled with the set's names but not the hub object's UID (it
// is the member controller's, as the report ConfigMap is). Its Pod runs `mysqlfleet-backup seed` in the
// database image, the runner copied in by an init container from RunnerImage, as the hub's backup and restore
// Jobs do: it dumps the chosen source Pod as the admin account and loads the dump into the target Pod as root,
// out of the binary log, then records the dump's GTID position there (internal/backup.Seed). While the Job
// runs, the instance is reported as being seeded and the engine leaves it alone; once it succeeded, the
// instance has executed the dump's position and the next pass points it at the primary. A Job that failed stays
// for seedJobTTL, its reason in the instance's error, and the next seed starts once the member's TTL
// controller has removed it: the Job's own retries (backoffLimit) come first, and no delete right is needed.
// The runner refuses a target that has executed any transaction; the engine never asks for one.

// SeedComponent is the app.kubernetes.io/component of the seed Jobs and their Pods.
const SeedComponent = "seed"

const (
	// seedJobTTL is how long a finished seed Job stays (ttlSecondsAfterFinished).
	seedJobTTL = 2 * time.Minute
	// seedWait is how long the runner waits for both servers to answer before it starts.
	seedWait = 5 * time.Minute
	// seedRetries is the Job's backoffLimit: a seed that failed midway leaves the target without a GTID, so it
	// may be loaded again.
	seedRetries = 2
)

func seedJobName(sts *appsv1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-seed-%d", sts.Name, ordinal)
}

// podHost is the DNS name of the set's Pod of ordinal i, through the StatefulSet's headless Service (which
// publishes Pods that are not ready: the target of a seed is not).
func podHost(sts *appsv1.StatefulSet, i int) string {
	return podName(sts, i) + "." + sts.Spec.ServiceName
}

// seedJob is the Job that seeds instance target with a dump of instance source: the engine and the credentials
// Secret from the StatefulSet's contract, the dump tool from its servers' image. It is pure.
func seedJob(sts *appsv1.StatefulSet, target, source int, runnerImage string) (*batchv1.Job, error) {
	k, err := readContract(sts)
	if err != nil {
		return nil, err
	}
	secret := k.credentialsSecret
	c := mysqlContainer(&sts.Spec.Template.Spec)
	if c == nil {
		return nil, fmt.Errorf("StatefulSet %s has no %q container", sts.Name, render.MySQLContainerName)
	}
	value := func(name, v string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValue(v)
	}
	fromSecret := func(name, key string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValueFrom(corev1ac.EnvVarSource().
			WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(secret).WithKey(key)))
	}
	env := []*corev1ac.EnvVarApplyConfiguration{
		value("BACKUP_ENGINE", string(k.engine)),
		value("MYSQL_HOST", podHost(sts, source)),
		value("MYSQL_USER", v1alpha1.AdminUser),
		fromSecret("MYSQL_PWD", v1alpha1.AdminPasswordKey),
		value("SEED_TARGET_HOST", podHost(sts, target)),
		value("SEED_TARGET_USER", "root"),
		fromSecret("SEED_TARGET_PWD", v1alpha1.RootPasswordKey),
		value("BACKUP_WAIT", seedWait.String()),
		value("BACKUP_REPORT_FILE", corev1.TerminationMessagePathDefault),
		value("HOME", "/tmp"),
	}
	raw, err := json.Marshal(render.RunnerPodSpec(c.Image, runnerImage, []string{"seed"}, env))
	if err != nil {
		return nil, err
	}
	var pod corev1.PodSpec
	if err := json.Unmarshal(raw, &pod); err != nil {
		return nil, err
	}
	labels := map[string]string{
		v1alpha1.ManagedByLabel:            v1alpha1.ManagedByValue,
		v1alpha1.InstanceLabel:             sts.Name,
		v1alpha1.ComponentLabel:            SeedComponent,
		v1alpha1.ReplicationComponentLabel: SeedComponent,
	}
	for _, k := range []string{v1alpha1.ClusterNameLabel, v1alpha1.ClusterNamespaceLabel} {
		if v := sts.Labels[k]; v != "" {
			labels[k] = v
		}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: seedJobName(sts, target), Namespace: sts.Namespace, Labels: labels,
			Annotations: map[string]string{v1alpha1.StatefulSetUIDAnnotation: string(sts.UID)},
			// Not blocking the owner's deletion, which would need update on statefulsets/finalizers.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: appsv1.SchemeGroupVersion.String(),
				Kind: "StatefulSet", Name: sts.Name, UID: sts.UID, Controller: ptr.To(true)}},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To(int32(seedRetries)),
			TTLSecondsAfterFinished: ptr.To(int32(seedJobTTL / time.Second)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       pod,
			},
		},
	}, nil
}

// seedState is how the seed Job of one instance stands.
type seedState struct {
	job     string
	running bool
	// failed is why the Job failed; empty while it runs or once it succeeded.
	failed    string
	succeeded bool
}

// seedStates reads the set's seed Jobs (from the cache) by ordinal.
func (r *Reconciler) seedStates(ctx context.Context, s *scope) (map[int]seedState, error) {
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(s.sts.Namespace), client.MatchingLabels{
		v1alpha1.InstanceLabel: s.sts.Name, v1alpha1.ComponentLabel: SeedComponent,
	}); err != nil {
		return nil, fmt.Errorf("failed to list the seed Jobs: %w", err)
	}
	outcomes, err := r.jobPods(ctx, s, SeedComponent)
	if err != nil {
		return nil, err
	}
	out := map[int]seedState{}
	for i := range instances(s.sts) {
		for _, job := range jobs.Items {
			if job.Name != seedJobName(s.sts, i) || !metav1.IsControlledBy(&job, s.sts) {
				continue
			}
			st := seedState{job: job.Name}
			switch {
			case job.Status.Succeeded > 0:
				st.succeeded = true
			case jobFailed(&job):
				st.failed = "the Job failed"
				for _, o := range outcomes {
					if o.job == job.Name && o.reason != "" {
						st.failed = o.reason
					}
				}
			default:
				st.running = true
			}
			out[i] = st
		}
	}
	return out, nil
}

// seeding marks the instances whose seed Job runs, so that the engine leaves them alone.
func seeding(obs []clustering.Observation, states map[int]seedState) {
	for i, st := range states {
		if st.running && i < len(obs) {
			obs[i].Seeding = fmt.Sprintf("being seeded by Job %s", st.job)
		}
	}
}

// seed is the plan's seed step: it creates the instance's seed Job, unless one is there (running, or finished
// and waiting for the TTL controller; the report says which).
func (r *Reconciler) seed(ctx context.Context, s *scope, states map[int]seedState, i, source int) error {
	if _, ok := states[i]; ok {
		return nil
	}
	job, err := seedJob(s.sts, i, source, r.RunnerImage)
	if err != nil {
		return err
	}
	if err := r.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create the seed Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Seeding an instance with a dump", "statefulSet", klog.KObj(s.sts),
		"pod", podName(s.sts, i), "from", podName(s.sts, source), "job", job.Name)
	return nil
}

// seedOutcomes adds to the report, for each instance the plan seeds, what became of its last seed Job when it
// finished without leaving the instance seeded.
func seedOutcomes(rep *v1alpha1.ReplicationReport, plan clustering.Plan, states map[int]seedState) {
	for _, step := range plan.Steps {
		st, ok := states[step.Instance]
		if step.Action != clustering.ActionSeed || !ok || step.Instance >= len(rep.Instances) {
			continue
		}
		var why string
		switch {
		case st.failed != "":
			why = fmt.Sprintf("the seed Job %s failed: %s", st.job, strings.TrimSpace(st.failed))
		case st.succeeded:
			why = fmt.Sprintf("the seed Job %s succeeded but the instance has executed nothing", st.job)
		default:
			continue
		}
		in := &rep.Instances[step.Instance]
		in.Error = fmt.Sprintf("%s; %s; another starts once it is removed, %s after it finished", in.Error, why,
			seedJobTTL)
		if rep.LastError == "" || strings.HasPrefix(rep.LastError, fmt.Sprintf("instance %d:", step.Instance)) {
			rep.LastError = fmt.Sprintf("instance %d: %s", step.Instance, in.Error)
		}
	}
}
