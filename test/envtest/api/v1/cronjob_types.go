package v1

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConcurrencyPolicy says how the jobs of a CronJob are run when one is
// still running at the next schedule.
type ConcurrencyPolicy string

// The concurrency policies.
const (
	AllowConcurrent   ConcurrencyPolicy = "Allow"
	ForbidConcurrent  ConcurrencyPolicy = "Forbid"
	ReplaceConcurrent ConcurrencyPolicy = "Replace"
)

// CronJobSpec is the desired state of a CronJob.
type CronJobSpec struct {
	// Schedule is in Cron format.
	Schedule string `json:"schedule"`
	// StartingDeadlineSeconds is how late a job may start after its schedule.
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`
	// ConcurrencyPolicy says how to treat concurrent executions.
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`
	// Suspend stops later executions.
	Suspend *bool `json:"suspend,omitempty"`
	// JobTemplate is the job a CronJob runs.
	JobTemplate batchv1.JobTemplateSpec `json:"jobTemplate"`
	// SuccessfulJobsHistoryLimit is how many finished jobs are kept.
	SuccessfulJobsHistoryLimit *int32 `json:"successfulJobsHistoryLimit,omitempty"`
	// FailedJobsHistoryLimit is how many failed jobs are kept.
	FailedJobsHistoryLimit *int32 `json:"failedJobsHistoryLimit,omitempty"`
}

// CronJobStatus is the observed state of a CronJob.
type CronJobStatus struct {
	// Active are the running jobs.
	Active []corev1.ObjectReference `json:"active,omitempty"`
	// LastScheduleTime is when a job was last scheduled.
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
}

// CronJob runs a job on a schedule.
type CronJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CronJobSpec   `json:"spec,omitempty"`
	Status CronJobStatus `json:"status,omitempty"`
}

// CronJobList is a list of CronJobs.
type CronJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CronJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CronJob{}, &CronJobList{})
}
