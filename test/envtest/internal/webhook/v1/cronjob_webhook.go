// Package v1 holds the CronJob's admission webhooks of kubebuilder's
// tutorial, a defaulter and a validator served by a controller-runtime
// manager, which its envtest suite (webhook_suite_test.go) installs with
// envtest's WebhookInstallOptions against watchcache acting as
// kube-apiserver and etcd.
package v1

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	batchv1 "github.com/watchcache/watchcache/test/envtest/api/v1"
)

// SetupCronJobWebhookWithManager registers the CronJob's webhooks in the
// manager's webhook server.
func SetupCronJobWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &batchv1.CronJob{}).
		WithValidator(CronJobValidator{}).
		WithDefaulter(CronJobDefaulter{
			ConcurrencyPolicy:          batchv1.AllowConcurrent,
			SuccessfulJobsHistoryLimit: 3,
			FailedJobsHistoryLimit:     1,
		}).
		Complete()
}

// CronJobDefaulter sets the fields a CronJob leaves out.
type CronJobDefaulter struct {
	ConcurrencyPolicy          batchv1.ConcurrencyPolicy
	Suspend                    bool
	SuccessfulJobsHistoryLimit int32
	FailedJobsHistoryLimit     int32
}

// Default sets the defaults.
func (d CronJobDefaulter) Default(_ context.Context, cronJob *batchv1.CronJob) error {
	spec := &cronJob.Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = d.ConcurrencyPolicy
	}
	if spec.Suspend == nil {
		spec.Suspend = new(d.Suspend)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = new(d.SuccessfulJobsHistoryLimit)
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = new(d.FailedJobsHistoryLimit)
	}
	return nil
}

// CronJobValidator refuses CronJobs whose name is too long for the names
// of their Jobs, or whose schedule is not in Cron format.
type CronJobValidator struct{}

// ValidateCreate validates a new CronJob.
func (CronJobValidator) ValidateCreate(_ context.Context, cronJob *batchv1.CronJob) (admission.Warnings, error) {
	return nil, validate(cronJob)
}

// ValidateUpdate validates a changed CronJob.
func (CronJobValidator) ValidateUpdate(_ context.Context, _, cronJob *batchv1.CronJob) (admission.Warnings, error) {
	return nil, validate(cronJob)
}

// ValidateDelete lets every deletion through.
func (CronJobValidator) ValidateDelete(context.Context, *batchv1.CronJob) (admission.Warnings, error) {
	return nil, nil
}

// maxNameLength leaves room in a Job's name (63 characters) for the 11
// characters of the schedule time a CronJob controller appends.
const maxNameLength = 52

func validate(cronJob *batchv1.CronJob) error {
	var errs field.ErrorList
	if len(cronJob.Name) > maxNameLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cronJob.Name, fmt.Sprintf("must be no more than %d characters", maxNameLength)))
	}
	if err := checkSchedule(cronJob.Spec.Schedule); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "schedule"), cronJob.Spec.Schedule, err.Error()))
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(batchv1.GroupVersion.WithKind("CronJob").GroupKind(), cronJob.Name, errs)
}

// cronFields are the ranges of a Cron schedule's five fields.
var cronFields = []struct {
	name     string
	min, max int
}{{"minute", 0, 59}, {"hour", 0, 23}, {"day of month", 1, 31}, {"month", 1, 12}, {"day of week", 0, 6}}

// checkSchedule checks a schedule in standard Cron format: five fields,
// each a comma-separated list of *, n or n-m, with an optional /step.
// (Names of months and days, and @descriptors, are not accepted.)
func checkSchedule(schedule string) error {
	fields := strings.Fields(schedule)
	if len(fields) != len(cronFields) {
		return fmt.Errorf("expected %d fields, found %d", len(cronFields), len(fields))
	}
	for i, f := range fields {
		want := cronFields[i]
		for _, item := range strings.Split(f, ",") {
			span, step, stepped := strings.Cut(item, "/")
			if n, err := strconv.Atoi(step); stepped && (err != nil || n <= 0) {
				return fmt.Errorf("%s: bad step in %q", want.name, item)
			}
			if span == "*" {
				continue
			}
			low, high, ranged := strings.Cut(span, "-")
			if !ranged {
				high = low
			}
			lo, errLo := strconv.Atoi(low)
			hi, errHi := strconv.Atoi(high)
			if errLo != nil || errHi != nil || lo < want.min || hi > want.max || lo > hi {
				return fmt.Errorf("%s: %q is not in %d-%d", want.name, item, want.min, want.max)
			}
		}
	}
	return nil
}
