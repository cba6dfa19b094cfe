// Package podrefs says which objects of its namespace a pod references: the
// Secrets, ConfigMaps, PersistentVolumeClaims, ResourceClaims and the
// ServiceAccount its spec names (in every container kind, volume and
// projection, as kube-apiserver's pod visitors). The ServiceAccount
// admission plugin refuses mirror pods that reference them; the Node
// authorizer lets a node read only what its pods reference.
package podrefs

import corev1 "k8s.io/api/core/v1"

// Refs are the names of the objects a pod references, each once.
type Refs struct {
	Secrets, ConfigMaps, PersistentVolumeClaims, ResourceClaims []string
	ServiceAccount                                              string
}

// Of is what pod references. A generic ephemeral volume references the
// claim named <pod>-<volume> that is made for it; a resource claim from a
// template, the claim named in the pod's status.
func Of(pod *corev1.Pod) Refs {
	r := Refs{ServiceAccount: pod.Spec.ServiceAccountName}
	add := func(list *[]string, name string) {
		if name == "" {
			return
		}
		for _, n := range *list {
			if n == name {
				return
			}
		}
		*list = append(*list, name)
	}
	secretRef := func(ref *corev1.LocalObjectReference) {
		if ref != nil {
			add(&r.Secrets, ref.Name)
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add(&r.Secrets, s.Name)
	}
	env := func(from []corev1.EnvFromSource, vars []corev1.EnvVar) {
		for _, f := range from {
			if f.SecretRef != nil {
				add(&r.Secrets, f.SecretRef.Name)
			}
			if f.ConfigMapRef != nil {
				add(&r.ConfigMaps, f.ConfigMapRef.Name)
			}
		}
		for _, v := range vars {
			if v.ValueFrom == nil {
				continue
			}
			if k := v.ValueFrom.SecretKeyRef; k != nil {
				add(&r.Secrets, k.Name)
			}
			if k := v.ValueFrom.ConfigMapKeyRef; k != nil {
				add(&r.ConfigMaps, k.Name)
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range pod.Spec.Containers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		env(c.EnvFrom, c.Env)
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			add(&r.Secrets, v.Secret.SecretName)
		case v.ConfigMap != nil:
			add(&r.ConfigMaps, v.ConfigMap.Name)
		case v.PersistentVolumeClaim != nil:
			add(&r.PersistentVolumeClaims, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			add(&r.PersistentVolumeClaims, pod.Name+"-"+v.Name)
		case v.AzureFile != nil:
			add(&r.Secrets, v.AzureFile.SecretName)
		case v.CephFS != nil:
			secretRef(v.CephFS.SecretRef)
		case v.Cinder != nil:
			secretRef(v.Cinder.SecretRef)
		case v.FlexVolume != nil:
			secretRef(v.FlexVolume.SecretRef)
		case v.RBD != nil:
			secretRef(v.RBD.SecretRef)
		case v.ScaleIO != nil:
			secretRef(v.ScaleIO.SecretRef)
		case v.ISCSI != nil:
			secretRef(v.ISCSI.SecretRef)
		case v.StorageOS != nil:
			secretRef(v.StorageOS.SecretRef)
		case v.CSI != nil:
			secretRef(v.CSI.NodePublishSecretRef)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					add(&r.Secrets, s.Secret.Name)
				}
				if s.ConfigMap != nil {
					add(&r.ConfigMaps, s.ConfigMap.Name)
				}
			}
		}
	}
	for _, c := range pod.Spec.ResourceClaims {
		if c.ResourceClaimName != nil {
			add(&r.ResourceClaims, *c.ResourceClaimName)
		}
	}
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			add(&r.ResourceClaims, *s.ResourceClaimName)
		}
	}
	return r
}
