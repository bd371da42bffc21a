package render

import corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

// RunnerPodSpec is the Pod of a Job that runs the backup runner with args inside image (the database image, for
// its dump tool and client), copied there from runnerImage by an init container, as the backup and restore Jobs
// run it, with env and no backup volume or store credentials. The member controller's seed Jobs use it.
func RunnerPodSpec(image, runnerImage string, args []string,
	env []*corev1ac.EnvVarApplyConfiguration) *corev1ac.PodSpecApplyConfiguration {
	return runnerPod(image, runnerImage, args, env, "", nil, false)
}
