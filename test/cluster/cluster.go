// Package cluster runs Kubernetes' own components (kube-controller-manager,
// kube-scheduler, and kwok's simulated nodes and kubelets) against an API
// server, watchcache or kube-apiserver 1.37.2 (the reference), and checks
// that the cluster behaves the same on both. It is a module of its own so
// that k8s.io/kubernetes never enters the main module.
package cluster
