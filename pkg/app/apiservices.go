// The APIService objects of the served group versions, as kube-apiserver's
// autoregister and crdregistration controllers keep them: one per group
// version ("v1.apps", "v1." for the core group), local and Available, made
// at start for the built-in ones and kept in step with the custom
// resources' groups.

package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/watchcache/watchcache/pkg/resource"
	"github.com/watchcache/watchcache/pkg/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// apiServiceManaged is the label of the APIServices the server manages:
// "onstart" for the built-in group versions, "true" for the custom
// resources' (kube-aggregator's AutoRegisterManagedLabel).
const apiServiceManaged = "kube-aggregator.kubernetes.io/automanaged"

// apiServicePriority is a group version's groupPriorityMinimum and
// versionPriority.
type apiServicePriority struct{ group, version int32 }

// apiServicePriorities are kube-apiserver 1.37's priorities of the
// built-in group versions (its aggregator's apiVersionPriorities), by
// group/version ("/v1" for the core group).
var apiServicePriorities = map[string]apiServicePriority{
	"/v1":                             {18000, 1},
	"apps/v1":                         {17800, 15},
	"events.k8s.io/v1":                {17750, 15},
	"authentication.k8s.io/v1":        {17700, 15},
	"authorization.k8s.io/v1":         {17600, 15},
	"autoscaling/v1":                  {17500, 15},
	"autoscaling/v2":                  {17500, 30},
	"batch/v1":                        {17400, 15},
	"certificates.k8s.io/v1":          {17300, 15},
	"networking.k8s.io/v1":            {17200, 15},
	"policy/v1":                       {17100, 15},
	"rbac.authorization.k8s.io/v1":    {17000, 15},
	"storage.k8s.io/v1":               {16800, 15},
	"admissionregistration.k8s.io/v1": {16700, 15},
	"apiextensions.k8s.io/v1":         {16700, 15},
	"scheduling.k8s.io/v1":            {16600, 15},
	"coordination.k8s.io/v1":          {16500, 15},
	"node.k8s.io/v1":                  {16300, 15},
	"discovery.k8s.io/v1":             {16200, 15},
	"resource.k8s.io/v1":              {16200, 21},
	"flowcontrol.apiserver.k8s.io/v1": {16100, 21},
	"storagemigration.k8s.io/v1":      {15800, 15},
}

// customAPIServicePriority is the priority of a custom resource's group
// version (kube-apiserver's crdregistration controller).
var customAPIServicePriority = apiServicePriority{1000, 100}

// apiServiceName names the APIService of a group version: "v1.apps",
// "v1." for the core group.
func apiServiceName(group, version string) string { return version + "." + group }

// newAPIService is the APIService of a served group version, local and
// Available since now; a group version not in apiServicePriorities (the
// --resources file's) is a custom resource's.
func newAPIService(group, version string, custom bool) *apiregistrationv1.APIService {
	prio, builtin := apiServicePriorities[group+"/"+version]
	managed := "onstart"
	if custom || !builtin {
		prio, managed = customAPIServicePriority, "true"
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	return &apiregistrationv1.APIService{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService"},
		ObjectMeta: metav1.ObjectMeta{Name: apiServiceName(group, version), UID: uuid.NewUUID(), CreationTimestamp: now,
			Labels: map[string]string{apiServiceManaged: managed}},
		Spec: apiregistrationv1.APIServiceSpec{Group: group, Version: version, GroupPriorityMinimum: prio.group, VersionPriority: prio.version},
		Status: apiregistrationv1.APIServiceStatus{Conditions: []apiregistrationv1.APIServiceCondition{{
			Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue, LastTransitionTime: now,
			Reason: "Local", Message: "Local APIServices are always available"}}},
	}
}

// apiServices keeps the APIServices of a registry's group versions.
type apiServices struct {
	registry *resource.Registry
	log      *slog.Logger
}

// store is the APIServices' store; nil if they are not served.
func (s *apiServices) store() (storage.Interface, *resource.Resource) {
	res := s.registry.Lookup("apiregistration.k8s.io", "v1", "apiservices")
	if res == nil {
		return nil, nil
	}
	return s.registry.Store(res), res
}

// ensure creates the APIService of a group version unless it exists.
func (s *apiServices) ensure(ctx context.Context, group, version string, custom bool) error {
	if group == "apiregistration.k8s.io" { // served by the aggregator itself: no APIService
		return nil
	}
	store, res := s.store()
	if store == nil {
		return nil
	}
	data, err := json.Marshal(newAPIService(group, version, custom))
	if err != nil {
		return err
	}
	_, err = store.Create(ctx, res.Key("", apiServiceName(group, version)), data)
	if err != nil && storage.CodeOf(err) != storage.ErrAlreadyExists {
		return fmt.Errorf("apiservice %s: %w", apiServiceName(group, version), err)
	}
	return nil
}

// ensureBuiltin creates the APIServices of the built-in group versions
// (at start, as kube-apiserver's autoregister controller does).
func (s *apiServices) ensureBuiltin(ctx context.Context) error {
	seen := map[string]bool{}
	for _, r := range s.registry.All() {
		if r.Definition != "" || r.NotServed || seen[r.GroupVersion()] {
			continue
		}
		seen[r.GroupVersion()] = true
		if err := s.ensure(ctx, r.Group, r.Version, false); err != nil {
			return err
		}
	}
	return nil
}

// changed keeps the custom resources' APIServices in step with the
// registry: one for each group version served, none for a group version
// no longer served (only those the server made: label "true").
func (s *apiServices) changed(added, removed []*resource.Resource) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, r := range added {
		if r.Definition != "" && !r.NotServed {
			if err := s.ensure(ctx, r.Group, r.Version, true); err != nil {
				s.log.Warn("registering the APIService of a custom resource", "err", err)
			}
		}
	}
	for _, r := range removed {
		if r.Definition == "" || len(s.registry.InGroupVersion(r.GroupVersion())) > 0 {
			continue
		}
		s.remove(ctx, r.Group, r.Version)
	}
}

// remove deletes the APIService of a custom resource's group version if
// the server made it.
func (s *apiServices) remove(ctx context.Context, group, version string) {
	store, res := s.store()
	if store == nil {
		return
	}
	key := res.Key("", apiServiceName(group, version))
	cur, err := store.Get(ctx, key, storage.GetOptions{})
	if err != nil {
		return
	}
	var svc apiregistrationv1.APIService
	if json.Unmarshal(cur.Stored(), &svc) != nil || svc.Labels[apiServiceManaged] != "true" {
		return
	}
	uid := string(svc.UID)
	if _, err := store.Delete(ctx, key, &storage.Preconditions{UID: &uid}, nil); err != nil &&
		storage.CodeOf(err) != storage.ErrNotFound && storage.CodeOf(err) != storage.ErrConflict {
		s.log.Warn("removing the APIService of a custom resource", "apiservice", svc.Name, "err", err)
	}
}
