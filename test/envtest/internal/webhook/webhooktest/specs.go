// Package webhooktest holds the specs both webhook suites run (on envtest
// with watchcache's assets, and on package testenv): the CronJob's webhooks
// called by the API server on writes.
package webhooktest

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kbatch "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batchv1 "github.com/watchcache/watchcache/test/envtest/api/v1"
)

// cronJob is a CronJob in the default namespace that sets none of the
// fields the defaulter sets.
func cronJob(name, schedule string) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.CronJobSpec{
			Schedule: schedule,
			JobTemplate: kbatch.JobTemplateSpec{Spec: kbatch.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers:    []corev1.Container{{Name: "work", Image: "busybox"}},
				RestartPolicy: corev1.RestartPolicyOnFailure,
			}}}},
		},
	}
}

// Specs registers the specs; k8sClient points at the suite's client,
// set in its BeforeSuite.
func Specs(k8sClient *client.Client) bool {
	return Describe("CronJob webhooks", func() {
		ctx := context.Background()

		It("defaults a new CronJob through the mutating webhook", func() {
			obj := cronJob("defaulted", "*/5 * * * *")
			Expect((*k8sClient).Create(ctx, obj)).To(Succeed())
			stored := &batchv1.CronJob{}
			Expect((*k8sClient).Get(ctx, client.ObjectKeyFromObject(obj), stored)).To(Succeed())
			Expect(stored.Spec.ConcurrencyPolicy).To(Equal(batchv1.AllowConcurrent))
			Expect(stored.Spec.Suspend).To(HaveValue(BeFalse()))
			Expect(stored.Spec.SuccessfulJobsHistoryLimit).To(HaveValue(BeEquivalentTo(3)))
			Expect(stored.Spec.FailedJobsHistoryLimit).To(HaveValue(BeEquivalentTo(1)))
		})

		It("refuses a bad schedule through the validating webhook, storing nothing", func() {
			obj := cronJob("bad-schedule", "every minute")
			err := (*k8sClient).Create(ctx, obj)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring(`admission webhook "vcronjob-v1.kb.io" denied the request`))
			Expect(err.Error()).To(ContainSubstring("spec.schedule"))
			err = (*k8sClient).Get(ctx, client.ObjectKeyFromObject(obj), &batchv1.CronJob{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
		})

		It("refuses an update that breaks the schedule", func() {
			obj := cronJob("updated", "0 3 * * 1-5")
			Expect((*k8sClient).Create(ctx, obj)).To(Succeed())
			obj.Spec.Schedule = "61 * * * *"
			err := (*k8sClient).Update(ctx, obj)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		})
	})
}
