// Package controller is the CronJob controller of kubebuilder's tutorial,
// which its envtest suite (suite_test.go, as kubebuilder scaffolds it) runs
// against watchcache acting as kube-apiserver and etcd. It keeps a
// CronJob's status from the Jobs it owns and prunes their history; the
// tutorial's scheduling of new Jobs (robfig/cron) is left out, as its
// tests do not reach it.
package controller

import (
	"context"
	"slices"
	"time"

	kbatch "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ref "k8s.io/client-go/tools/reference"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	batchv1 "github.com/watchcache/watchcache/test/envtest/api/v1"
)

// CronJobReconciler reconciles a CronJob object.
type CronJobReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

const (
	// jobOwnerKey indexes Jobs by the name of the CronJob controlling them.
	jobOwnerKey = ".metadata.controller"
	// scheduledTimeAnnotation is when a Job was scheduled to run.
	scheduledTimeAnnotation = "batch.tutorial.kubebuilder.io/scheduled-at"
)

// Reconcile sets a CronJob's status from its Jobs (the active ones, the
// last schedule time) and deletes the finished Jobs past its history
// limits.
func (r *CronJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var cronJob batchv1.CronJob
	if err := r.Get(ctx, req.NamespacedName, &cronJob); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var childJobs kbatch.JobList
	if err := r.List(ctx, &childJobs, client.InNamespace(req.Namespace), client.MatchingFields{jobOwnerKey: req.Name}); err != nil {
		return ctrl.Result{}, err
	}

	var active, successful, failed []*kbatch.Job
	var mostRecent *time.Time
	for i := range childJobs.Items {
		job := &childJobs.Items[i]
		switch finished(job) {
		case "":
			active = append(active, job)
		case kbatch.JobFailed:
			failed = append(failed, job)
		case kbatch.JobComplete:
			successful = append(successful, job)
		}
		if at, err := time.Parse(time.RFC3339, job.Annotations[scheduledTimeAnnotation]); err == nil {
			if mostRecent == nil || mostRecent.Before(at) {
				mostRecent = &at
			}
		}
	}
	cronJob.Status.LastScheduleTime = nil
	if mostRecent != nil {
		cronJob.Status.LastScheduleTime = &metav1.Time{Time: *mostRecent}
	}
	cronJob.Status.Active = nil
	for _, job := range active {
		jobRef, err := ref.GetReference(r.Scheme, job)
		if err != nil {
			log.Error(err, "unable to make reference to active job", "job", job)
			continue
		}
		cronJob.Status.Active = append(cronJob.Status.Active, *jobRef)
	}
	if err := r.Status().Update(ctx, &cronJob); err != nil {
		return ctrl.Result{}, err
	}

	for _, prune := range []struct {
		jobs  []*kbatch.Job
		limit *int32
	}{{failed, cronJob.Spec.FailedJobsHistoryLimit}, {successful, cronJob.Spec.SuccessfulJobsHistoryLimit}} {
		if prune.limit == nil {
			continue
		}
		slices.SortFunc(prune.jobs, func(a, b *kbatch.Job) int {
			return startTime(a).Compare(startTime(b))
		})
		for i := 0; i < len(prune.jobs)-int(*prune.limit); i++ {
			err := r.Delete(ctx, prune.jobs[i], client.PropagationPolicy(metav1.DeletePropagationBackground))
			if client.IgnoreNotFound(err) != nil {
				log.Error(err, "unable to delete old job", "job", prune.jobs[i])
			}
		}
	}
	return ctrl.Result{}, nil
}

// finished is the condition that finished a Job (Complete or Failed), or
// "" for a Job still running.
func finished(job *kbatch.Job) kbatch.JobConditionType {
	for _, c := range job.Status.Conditions {
		if (c.Type == kbatch.JobComplete || c.Type == kbatch.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

// startTime is when a Job started (the zero time if it has not).
func startTime(job *kbatch.Job) time.Time {
	if job.Status.StartTime == nil {
		return time.Time{}
	}
	return job.Status.StartTime.Time
}

// SetupWithManager indexes Jobs by their controlling CronJob and runs the
// reconciler on CronJobs and the Jobs they own.
func (r *CronJobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	apiVersion := batchv1.GroupVersion.String()
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &kbatch.Job{}, jobOwnerKey, func(obj client.Object) []string {
		owner := metav1.GetControllerOf(obj)
		if owner == nil || owner.APIVersion != apiVersion || owner.Kind != "CronJob" {
			return nil
		}
		return []string{owner.Name}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&batchv1.CronJob{}).
		Owns(&kbatch.Job{}).
		Named("cronjob").
		Complete(r)
}
