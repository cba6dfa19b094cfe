package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kbatch "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	batchv1 "github.com/watchcache/watchcache/test/envtest/api/v1"
)

var _ = Describe("CronJob controller", func() {
	const (
		timeout  = 10 * time.Second
		interval = 250 * time.Millisecond
	)
	podTemplate := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers:    []corev1.Container{{Name: "work", Image: "busybox"}},
		RestartPolicy: corev1.RestartPolicyOnFailure,
	}}

	It("lists the Jobs it owns that are running in the CronJob's status", func() {
		key := types.NamespacedName{Name: "nightly", Namespace: "default"}
		cronJob := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
			Spec: batchv1.CronJobSpec{
				Schedule:    "1 * * * *",
				JobTemplate: kbatch.JobTemplateSpec{Spec: kbatch.JobSpec{Template: podTemplate}},
			},
		}
		Expect(k8sClient.Create(ctx, cronJob)).To(Succeed())

		By("a CronJob without Jobs has none active")
		created := &batchv1.CronJob{}
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, created)).To(Succeed())
			g.Expect(created.Status.Active).To(BeEmpty())
		}, 2*time.Second, interval).Should(Succeed())

		By("a running Job it controls is active")
		job := &kbatch.Job{
			ObjectMeta: metav1.ObjectMeta{
				Name: "nightly-1", Namespace: key.Namespace,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(created, batchv1.GroupVersion.WithKind("CronJob"))},
			},
			Spec: kbatch.JobSpec{Template: podTemplate},
		}
		Expect(k8sClient.Create(ctx, job)).To(Succeed())
		// Status is written through /status, after the create.
		job.Status.Active = 2
		Expect(k8sClient.Status().Update(ctx, job)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, created)).To(Succeed())
			g.Expect(created.Status.Active).To(HaveLen(1))
			g.Expect(created.Status.Active[0].Name).To(Equal(job.Name))
		}, timeout, interval).Should(Succeed())

		By("a Job that completed is no longer active")
		now := metav1.Now()
		job.Status = kbatch.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1, Conditions: []kbatch.JobCondition{
			{Type: kbatch.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: kbatch.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}}
		Expect(k8sClient.Status().Update(ctx, job)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, created)).To(Succeed())
			g.Expect(created.Status.Active).To(BeEmpty())
		}, timeout, interval).Should(Succeed())
	})
})
